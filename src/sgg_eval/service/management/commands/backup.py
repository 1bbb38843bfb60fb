"""`sgg-eval manage backup FILE`: the service's accounts, submissions, scores and files in one file (backup.py)."""

from pathlib import Path

from django.core.management.base import BaseCommand, CommandError

from sgg_eval.core.errors import InputError
from sgg_eval.service.backup import backup


class Command(BaseCommand):
    help = "Write the service's backup (database rows, uploaded files, secret key) to FILE, a .tar.gz."

    def add_arguments(self, parser):
        parser.add_argument("file")

    def handle(self, *args, **options):
        try:
            made = backup(Path(options["file"]))
        except InputError as exc:
            raise CommandError(str(exc), returncode=2) from None
        self.stdout.write(f"{options['file']}: {made['submissions']} submissions, {made['files']} files, "
                          f"{made['bytes']} bytes")  # fmt: skip
