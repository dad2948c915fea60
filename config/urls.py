"""URL configuration: HTML pages, the REST API under /api/, Django admin, login/logout."""

from django.contrib import admin
from django.contrib.auth.decorators import login_not_required
from django.templatetags.static import static
from django.urls import include, path
from django.views.generic import RedirectView

# Every app's routes take ids as <id:...> (config.converters), registered by labeling's ready().


class FaviconRedirect(RedirectView):
    """/favicon.ico to the SVG icon, its static address found per request: with PRODUCTION's
    manifest storage the hashed name exists only after collectstatic, and `migrate`, which
    loads this module for its checks, runs before collectstatic in a fresh installation."""

    permanent = True

    def get_redirect_url(self, *args: object, **kwargs: object) -> str:
        return static("favicon.svg")


urlpatterns = [
    # Browsers ask every site for /favicon.ico; the icon is an SVG among the static files.
    path("favicon.ico", login_not_required(FaviconRedirect.as_view())),
    path("admin/", admin.site.urls),
    path("accounts/", include("operations.sign_in_urls")),
    path("accounts/", include("django.contrib.auth.urls")),
    path("api/", include("labeling.api_urls")),
    path("api/", include("operations.api_urls")),
    path("api/", include("uploads.api_urls")),
    path("api/", include("webhooks.api_urls")),
    path("api/", include("graded.api_urls")),
    path("api/", include("pairwise.api_urls")),
    path("api/", include("sxs.api_urls")),
    path("api/", include("training.api_urls")),
    path("", include("labeling.urls")),
    path("", include("webhooks.urls")),
    path("", include("operations.urls")),
    path("", include("graded.urls")),
    path("", include("pairwise.urls")),
    path("", include("sxs.urls")),
    path("", include("training.urls")),
]
