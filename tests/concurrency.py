"""Run one request per user in its own thread, all released together (for lease races)."""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import TypeVar

from django.contrib.auth.models import AbstractBaseUser
from django.db import connection

Result = TypeVar("Result")


def at_once(
    users: tuple[AbstractBaseUser, ...], ask: Callable[[AbstractBaseUser], Result]
) -> tuple[list[Result | None], list[BaseException]]:
    """`ask(user)` for every user in its own thread, released together by a barrier: the
    results in user order, and whatever was raised (for the caller's assertion)."""
    barrier = threading.Barrier(len(users))
    results: list[Result | None] = [None] * len(users)
    failures: list[BaseException] = []

    def run(index: int, user: AbstractBaseUser) -> None:
        try:
            barrier.wait()
            results[index] = ask(user)
        except BaseException as error:  # surfaced by the caller's assertion
            failures.append(error)
        finally:
            connection.close()

    threads = [threading.Thread(target=run, args=(index, user)) for index, user in enumerate(users)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    return results, failures
