"""Judges whose labels are uploaded as files (any model the team ran elsewhere)."""

from __future__ import annotations

from typing import ClassVar

from sampling.judge_kinds.base import JudgeKind, JudgeSetting


class UploadKind(JudgeKind):
    name = "upload"
    label = "Labels uploaded as files"
    api_help = "labels from files"
    runs = False
    settings: ClassVar[tuple[JudgeSetting, ...]] = (
        JudgeSetting(
            "version_date",
            "date",
            help="when the labels were made (YYYY-MM-DD)",
            blank_is_none=True,
            column=True,
        ),
    )
    following = "upload its labels next"
    manage_template = "graded/judges/upload_manage.html"
