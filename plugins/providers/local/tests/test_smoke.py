def test_fixture_loaded(make_host):
    assert make_host().records == {}
