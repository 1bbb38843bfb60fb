"""DVC stage site: the results page, reports/site/index.html (one sortable table per dataset x task, or
protocol for panoptic SGG; each row opens its entry's page), static and offline."""

from sgg_eval.pipeline.config import load_params, run_stage
from sgg_eval.pipeline.site_pages import run_site


def main() -> None:
    params = load_params()
    folder = f"{params['paths']['reports']}/site"
    written = run_site(params, folder)
    print(f"site: {folder}/index.html and {len(written) - 1} entry pages")


if __name__ == "__main__":
    run_stage(main)
