"""The ID token's claims: the user's name, address and groups, as Keycloak's group mapper sends
them. An application named "expired-id-tokens" gets ID tokens that expired ten minutes before they
were issued: the provider's way to let a test see an expired token arrive through the real flow."""

import time
from typing import Any

from oauth2_provider.oauth2_validators import OAuth2Validator

EXPIRED_TOKENS_APPLICATION = "expired-id-tokens"


class GroupsValidator(OAuth2Validator):
    oidc_claim_scope = None  # every claim below, whatever the scopes

    def get_additional_claims(self, request: Any) -> dict[str, Any]:
        user = request.user
        return {
            "preferred_username": user.username,
            "email": user.email,
            "given_name": user.first_name,
            "family_name": user.last_name,
            "groups": sorted(user.groups.values_list("name", flat=True)),
        }

    def get_id_token_dictionary(self, token: Any, token_handler: Any, request: Any) -> Any:
        claims, expiration_time = super().get_id_token_dictionary(token, token_handler, request)
        if request.client.name == EXPIRED_TOKENS_APPLICATION:
            claims["iat"] = int(time.time()) - 660
            claims["exp"] = claims["iat"] + 60
        return claims, expiration_time
