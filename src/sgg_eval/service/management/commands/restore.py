"""`sgg-eval manage restore FILE`: a backup (backup.py) restored into a service that is still empty."""

from pathlib import Path

from django.core.management.base import BaseCommand, CommandError

from sgg_eval.core.errors import InputError
from sgg_eval.service.backup import restore


class Command(BaseCommand):
    help = "Restore FILE (written by `backup`) into this service's home, which must hold no account yet."

    def add_arguments(self, parser):
        parser.add_argument("file")

    def handle(self, *args, **options):
        try:
            made = restore(Path(options["file"]))
        except InputError as exc:
            raise CommandError(str(exc), returncode=2) from None
        self.stdout.write(f"restored {made['accounts']} accounts and {made['submissions']} submissions")
