"""The forms: one for an upload (the web page and the API bind the same one), one for a new token."""

from django import forms


class SubmissionForm(forms.Form):
    file = forms.FileField(help_text="any file `sgg-eval evaluate` reads for this benchmark")
    method = forms.CharField(max_length=120)
    paper_url = forms.URLField(required=False, label="Paper")
    code_url = forms.URLField(required=False, label="Code")
    public = forms.BooleanField(required=False, help_text="show it on the public board once scored")


def submission_fields(data: dict) -> dict:
    """What ``intake.submit`` takes from a valid form, besides the file."""
    return {k: data[k] for k in ("method", "paper_url", "code_url", "public")}


class TokenForm(forms.Form):
    name = forms.CharField(max_length=100, initial="script")
