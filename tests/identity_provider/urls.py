from django.contrib.auth.views import LoginView
from django.urls import include, path

from tests.identity_provider.admin_api import seed_view

urlpatterns = [
    path("o/", include("oauth2_provider.urls", namespace="oauth2_provider")),
    path("admin/seed/", seed_view),
    path("accounts/login/", LoginView.as_view(template_name="provider_login.html"), name="login"),
]
