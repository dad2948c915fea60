"""The sign-in pages under /accounts/, ahead of django.contrib.auth's (whose password pages stay),
with the names Django's settings use ("login", "logout")."""

from django.contrib.auth.decorators import login_not_required
from django.urls import path

from operations import sign_in_views

urlpatterns = [
    path("login/", sign_in_views.SignInPage.as_view(), name="login"),
    path("logout/", login_not_required(sign_in_views.SignOutPage.as_view()), name="logout"),
    path("provider/sign-in/", sign_in_views.provider_sign_in_page, name="provider-sign-in"),
    path("provider/callback/", sign_in_views.provider_callback_page, name="provider-callback"),
]
