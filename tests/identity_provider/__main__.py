"""The test identity provider's commands (IDENTITY_PROVIDER_HOME names its folder):

python -m tests.identity_provider serve PORT    migrate, then serve on 127.0.0.1:PORT
python -m tests.identity_provider seed          users and clients from JSON on stdin
"""

from __future__ import annotations

import json
import os
import sys


def _seed(state: dict) -> None:
    from django.contrib.auth.models import Group, User
    from oauth2_provider.models import Application

    for entry in state.get("users", []):
        user, _ = User.objects.get_or_create(username=entry["username"])
        user.email = entry.get("email", "")
        user.first_name = entry.get("given_name", "")
        user.last_name = entry.get("family_name", "")
        user.set_password(entry["password"])
        user.save()
        user.groups.set([Group.objects.get_or_create(name=name)[0] for name in entry.get("groups", [])])
    for entry in state.get("clients", []):
        Application.objects.filter(client_id=entry["client_id"]).delete()
        Application.objects.create(
            name=entry["name"],
            client_id=entry["client_id"],
            client_secret=entry["secret"],
            client_type=Application.CLIENT_CONFIDENTIAL,
            authorization_grant_type=Application.GRANT_AUTHORIZATION_CODE,
            algorithm=Application.RS256_ALGORITHM,
            redirect_uris=" ".join(entry["redirect_uris"]),
            post_logout_redirect_uris=" ".join(entry.get("post_logout_redirect_uris", [])),
            skip_authorization=True,
        )


def main(argv: list[str]) -> int:
    os.environ["DJANGO_SETTINGS_MODULE"] = "tests.identity_provider.settings"
    import django
    from django.core.management import call_command

    django.setup()
    if argv[:1] == ["serve"] and len(argv) == 2:
        call_command("migrate", verbosity=0)
        call_command("runserver", f"127.0.0.1:{int(argv[1])}", use_reloader=False, skip_checks=True)
        return 0
    if argv == ["seed"]:
        _seed(json.load(sys.stdin))
        return 0
    print(__doc__, file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
