"""Set-up of the two-node test's campaign, as a process of its own on the cluster's database.

``python -m tests.labeling.cluster_campaign ASSESSORS TOPICS DEPTH`` creates a coordinator,
ASSESSORS token-only assessors and a running graded campaign of two runs over TOPICS topics x
DEPTH documents (metric DCG@10, budget: the whole pool), and prints ``{"campaign": id, "tokens": [...]}``.
"""

from __future__ import annotations

import io
import json
import os
import sys


def main(argv: list[str]) -> int:
    assessors, topics, depth = (int(value) for value in argv[1:4])
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
    import django

    django.setup()
    from django.contrib.auth import get_user_model
    from rest_framework.authtoken.models import Token

    from labeling.permissions import ROLE_ASSESSOR, ROLE_COORDINATOR, role_group
    from labeling.services.campaigns import campaign_assessors_assign, campaign_create, campaign_start
    from uploads.run_imports import runs_import

    # Token-only accounts: no password to hash.
    users = get_user_model().objects
    coordinator = users.create_user(username="cluster-coordinator")
    coordinator.groups.add(role_group(ROLE_COORDINATOR))
    names = [f"cluster{index:02d}" for index in range(assessors)]
    tokens = []
    for name in names:
        user = users.create_user(username=name)
        user.groups.add(role_group(ROLE_ASSESSOR))
        tokens.append(Token.objects.create(user=user).key)
    campaign = campaign_create(
        creator=coordinator,
        name="two nodes",
        metric="DCG@10",
        grades=["Bad", "Fair", "Good"],
        budget=topics * depth,
        budget_unit="judgments",
        overlap=1,
    )
    pairs = [(q, d) for q in range(1, topics + 1) for d in range(1, depth + 1)]
    run_a = "".join(f"{q} Q0 d{q}-{d} {d} {1000 - d}.0 alpha\n" for q, d in pairs)
    run_b = "".join(f"{q} Q0 d{q}-{d} {depth + 1 - d} {d}.0 beta\n" for q, d in pairs)
    files = [("a.run", io.BytesIO(run_a.encode())), ("b.run", io.BytesIO(run_b.encode()))]
    runs_import(campaign=campaign, files=files)
    campaign_assessors_assign(campaign=campaign, usernames=names)
    campaign_start(campaign=campaign)
    print(json.dumps({"campaign": campaign.pk, "tokens": tokens}))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
