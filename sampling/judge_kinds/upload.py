"""Judges whose labels are uploaded as files (any model the team ran elsewhere)."""

from __future__ import annotations

from typing import ClassVar

from sampling.judge_kinds.base import JudgeKind


class UploadKind(JudgeKind):
    name = "upload"
    label = "Labels uploaded as files"
    api_help = "labels from files"
    runs = False
    own_fields: ClassVar[tuple[str, ...]] = ("version_date",)
    following = "upload its labels next"
    manage_template = "graded/judges/upload_manage.html"
