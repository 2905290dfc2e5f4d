"""The public home's automation (.github/workflows) and the site's icon: what GitHub would run."""

from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parent.parent


def workflow(name: str) -> dict:
    text = (ROOT / ".github" / "workflows" / name).read_text()
    loaded = yaml.safe_load(text)
    loaded["on"] = loaded.pop(True, loaded.get("on"))  # YAML 1.1 reads the key `on` as True
    return loaded


def steps_of(job: dict) -> str:
    return "\n".join(str(step.get("run", "")) + str(step.get("uses", "")) for step in job["steps"])


def test_the_test_workflow_runs_what_ci_runs_on_every_push_and_pull_request():
    test = workflow("test.yml")
    assert set(test["on"]) == {"push", "pull_request"}
    job = test["jobs"]["test"]
    assert job["container"] == "debian:bookworm"  # Python 3.11 and Debian's chromium, as .ci/run expects
    assert "bash .ci/run" in steps_of(job) and "make test" in (ROOT / ".ci" / "run").read_text()
    assert "chromium" in steps_of(job) and "actions/checkout" in steps_of(job)


def test_the_pages_workflow_builds_checks_and_deploys_the_site_from_main():
    pages = workflow("pages.yml")
    assert pages["on"]["push"]["branches"] == ["main"]
    assert pages["permissions"]["pages"] == "write" and pages["permissions"]["id-token"] == "write"
    build = pages["jobs"]["build"]
    commands = steps_of(build)
    assert commands.index("make book") < commands.index("make site-check") < commands.index("upload-pages-artifact")
    upload = next(step for step in build["steps"] if "upload-pages-artifact" in step.get("uses", ""))
    assert upload["with"]["path"] == "_build/html"
    assert "actions/deploy-pages" in steps_of(pages["jobs"]["deploy"]) and pages["jobs"]["deploy"]["needs"] == "build"
    for target in ("book:", "site-check:"):  # the workflow uses the repository's own Makefile targets
        assert target in (ROOT / "Makefile").read_text()


def test_the_site_names_an_icon_that_exists():
    from PIL import Image

    icon = yaml.safe_load((ROOT / "_config.yml").read_text())["html"]["favicon"]
    with Image.open(ROOT / icon) as image:
        assert image.size == (64, 64)
