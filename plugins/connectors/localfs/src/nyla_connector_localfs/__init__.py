"""nyla connector: local folder and WebDAV."""
