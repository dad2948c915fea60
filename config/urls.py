"""URL configuration: HTML pages, the REST API under /api/, Django admin, login/logout."""

from django.contrib import admin
from django.urls import include, path

urlpatterns = [
    path("admin/", admin.site.urls),
    path("accounts/", include("django.contrib.auth.urls")),
    path("api/", include("labeling.api_urls")),
    path("api/", include("pairwise.api_urls")),
    path("api/", include("sxs.api_urls")),
    path("", include("labeling.urls")),
    path("", include("pairwise.urls")),
    path("", include("sxs.urls")),
]
