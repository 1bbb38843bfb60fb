"""The service's addresses; a board's and a submission's are stable permalinks."""

from django.contrib import admin
from django.contrib.auth import views as auth
from django.urls import path

from sgg_eval.service import api, views

urlpatterns = [
    path("", views.home, name="home"),
    path("b/<slug:name>/", views.board, name="board"),
    path("b/<slug:name>/<slug:which>/", views.board, name="board_of"),
    path("b/<slug:name>/<slug:which>.<slug:fmt>", api.export, name="export"),
    path("b/<slug:name>/submit", views.upload, name="upload"),
    path("s/<int:pk>/", views.submission, name="submission"),
    path("s/<int:pk>/data.js", views.submission_data, name="submission_data"),
    path("s/<int:pk>/publish", views.publish, name="publish"),
    path("s/<int:pk>/withdraw", views.withdraw, name="withdraw"),
    path("me/", views.mine, name="mine"),
    path("tokens/", views.token_list, name="tokens"),
    path("tokens/<int:pk>/revoke", views.token_revoke, name="token_revoke"),
    path("signup/", views.signup, name="signup"),
    path("login/", auth.LoginView.as_view(template_name="service/login.html"), name="login"),
    path("logout/", auth.LogoutView.as_view(), name="logout"),
    path("api/submissions", api.create, name="api_create"),
    path("api/submissions/<int:pk>", api.detail, name="api_detail"),
    path("api/submissions/<int:pk>/approve", api.approve, name="api_approve"),
    path("admin/", admin.site.urls),
]
