"""The assessor application: campaigns, imports, judging, roles, exports and the REST API."""
