"""Accounts without the admin site: create users with a role and campaign memberships, list
them, deactivate them (and bring them back).

    manage.py accounts create NAME --role assessor|coordinator|admin [--email E] [--campaign ID ...]
                              [--password-stdin]
    manage.py accounts deactivate NAME      manage.py accounts activate NAME
    manage.py accounts list

Without --password-stdin a random password is made and printed once (hand it over, then the user
changes it); with it, the first line of standard input is the password (never a command-line
argument, which other users of the machine can read in the process list).
"""

from __future__ import annotations

import secrets
import sys
from argparse import ArgumentParser
from typing import Any

from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError
from django.db import transaction

from labeling.models import Campaign, CampaignMember
from labeling.permissions import ROLE_ASSESSOR, ROLES, user_role
from labeling.services.campaigns import campaign_member_add
from operations.accounts import user_create, user_set_active


class Command(BaseCommand):
    help = "Create, list, deactivate and activate user accounts (docs/operations.md, Accounts)."

    def add_arguments(self, parser: ArgumentParser) -> None:
        actions = parser.add_subparsers(dest="action", required=True)
        create = actions.add_parser("create", help="a new user with a role")
        create.add_argument("username")
        create.add_argument("--role", choices=ROLES, required=True)
        create.add_argument("--email", default="")
        create.add_argument(
            "--campaign",
            type=int,
            action="append",
            default=[],
            metavar="ID",
            help="a campaign the user joins (as assessor; a coordinator or admin as coordinator)",
        )
        create.add_argument(
            "--password-stdin", action="store_true", help="read the password from standard input"
        )
        for name in ("deactivate", "activate"):
            actions.add_parser(name, help=f"{name} a user").add_argument("username")
        actions.add_parser("list", help="every user with role and state")

    def handle(self, *args: Any, **options: Any) -> None:
        action = options["action"]
        try:
            if action == "create":
                self._create(options)
            elif action == "list":
                self._list()
            else:
                user = user_set_active(actor=None, username=options["username"], active=action == "activate")
                self.stdout.write(f"{user.get_username()}: {'active' if user.is_active else 'deactivated'}")
        except ValueError as error:
            raise CommandError(str(error)) from None

    def _create(self, options: dict[str, Any]) -> None:
        password = (
            sys.stdin.readline().rstrip("\n") if options["password_stdin"] else secrets.token_urlsafe(12)
        )
        campaigns = list(Campaign.objects.filter(pk__in=options["campaign"]))
        missing = sorted(set(options["campaign"]) - {campaign.pk for campaign in campaigns})
        if missing:
            raise CommandError(f"no campaign {', '.join(map(str, missing))}")
        role = options["role"]
        member_role = (
            CampaignMember.Role.ASSESSOR if role == ROLE_ASSESSOR else CampaignMember.Role.COORDINATOR
        )
        with transaction.atomic():  # a refused membership leaves no user behind
            user = user_create(
                creator=None,
                username=options["username"],
                password=password,
                role=role,
                email=options["email"],
            )
            for campaign in campaigns:
                campaign_member_add(campaign=campaign, user=user, role=member_role)
        joined = f", member of campaign {', '.join(str(c.pk) for c in campaigns)}" if campaigns else ""
        self.stdout.write(f"created {user.get_username()} ({role}{joined})")
        if not options["password_stdin"]:
            self.stdout.write(f"password (shown once): {password}")

    def _list(self) -> None:
        for user in get_user_model().objects.order_by("username"):
            state = "active" if user.is_active else "deactivated"
            self.stdout.write(f"{user.get_username()}\t{user_role(user) or '-'}\t{state}")
