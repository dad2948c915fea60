"""The test identity provider's commands (IDENTITY_PROVIDER_HOME names its folder):

python -m tests.identity_provider serve PORT    migrate, then serve on 127.0.0.1:PORT
"""

from __future__ import annotations

import os
import sys


def main(argv: list[str]) -> int:
    os.environ["DJANGO_SETTINGS_MODULE"] = "tests.identity_provider.settings"
    import django
    from django.core.management import call_command

    django.setup()
    if argv[:1] == ["serve"] and len(argv) == 2:
        call_command("migrate", verbosity=0)
        call_command("runserver", f"127.0.0.1:{int(argv[1])}", use_reloader=False, skip_checks=True)
        return 0
    print(__doc__, file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
