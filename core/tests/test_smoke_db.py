from sqlalchemy import text


async def test_db_fixture_gives_fresh_schema_with_vector(db):
    async with db.session() as s:
        await s.execute(text("CREATE TABLE probe (id int, v vector(3))"))
        await s.execute(text("INSERT INTO probe VALUES (1, '[1,2,3]')"))
        dist = (await s.execute(text("SELECT v <=> '[1,2,3]' FROM probe"))).scalar_one()
    assert dist == 0.0
    info = await db.info()
    assert info["schema"] == db.schema and "probe" in info["tables"]
