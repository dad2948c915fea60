"""A token holder's next item in a pair campaign comes from the pairwise app (the full way)."""

from __future__ import annotations

from django.contrib.auth.models import AbstractBaseUser
from rest_framework.authtoken.models import Token
from rest_framework.test import APIClient

from labeling.models import Campaign


def test_it_sends_token_holders_of_pair_campaigns_the_full_way(
    topk_campaign: Campaign, assessor: AbstractBaseUser
) -> None:
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Token {Token.objects.create(user=assessor).key}")
    response = client.get(f"/api/campaigns/{topk_campaign.pk}/next/")
    assert response.status_code == 200
    body = response.json()
    assert body["kind"] == "pair" and {"left", "right"} <= set(body)
