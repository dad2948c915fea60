"""What an operator runs the installation with: accounts without the admin site, the health check
for monitors, the login limits and the trusted proxies, and `make run`'s server command."""
