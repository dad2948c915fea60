"""gunicorn settings for production: ``gunicorn -c config/gunicorn.py config.wsgi``.

Command-line flags override these (``--workers 5``, ``--bind 127.0.0.1:9000``).
"""

import os
import sys

# Loopback by default: the reverse proxy on this machine reaches it, nothing else does. A proxy
# on another machine needs `--bind 0.0.0.0:8000` (or GUNICORN_BIND) and its address in
# TRUSTED_PROXIES.
bind = os.environ.get("GUNICORN_BIND", "127.0.0.1:8000")
# One process per core plus one, two threads each: requests spend much of their time waiting on
# the database, and more threads per process only fight over the GIL.
workers = (os.cpu_count() or 1) + 1
worker_class = "gthread"
threads = 2
backlog = 2048
keepalive = 5
# A worker holds at most this many connections. Without a cap, the worker that happens to accept
# first keeps most keep-alive connections (measured: 44 of 50 assessors on one of three workers)
# and, held to one core by the GIL, falls behind while the others idle. With the cap, further
# clients wait in the listen backlog until a connection closes (after `keepalive` idle seconds);
# raise it for many assessors judging at once.
worker_connections = 20
# gunicorn's control interface listens on one socket in the home directory by default: two
# instances on a machine (two checkouts, a test next to `make run`) would share it. Nothing here
# uses it; operators who want it set --control-socket per instance.
control_socket_disable = True

# A request thread gives up the interpreter lock at every database call and must win it back
# from any thread of its process that computes (an upload being read and checked). CPython lets
# a computing thread keep the lock 5 ms before it is asked to yield, so requests beside a
# 1,000,000-line upload took up to 7.4 s (one worker, bench/bench_upload_lock.py's first 40 s);
# asked to yield after 0.5 ms, none took more than 0.65 s.
SWITCH_INTERVAL_SECONDS = 0.0005


def post_worker_init(worker: object) -> None:
    sys.setswitchinterval(SWITCH_INTERVAL_SECONDS)


def on_starting(server: object) -> None:
    # In the master, before any worker: a refused start (a bad setting, a failed start-up check)
    # is one line and exit status 2, not workers that die and are started again for ever.
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
    from config.startup import server_or_exit

    server_or_exit("gunicorn")
