"""Programs that talk to a running app over its REST API: standard library only, no app import."""
