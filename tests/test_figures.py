"""Every figure script runs (quick sizes) through ``rmtfl figures`` and writes PNG + JSON sidecar."""
import json

import pytest

from rmtfl.cli._main import main
from rmtfl.cli._figures import available_figures

EXPECTED = {"mp_bbp", "one_step", "two_step", "phase_diagram", "kernel_spectrum", "generalisation",
            "gradient_flow", "escape_time", "ck_spectrum"}


def test_every_gallery_figure_is_there():
    assert EXPECTED <= set(available_figures())


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_figure_quick(name, tmp_path):
    assert main(["figures", name, "--quick", "--out", str(tmp_path)]) == 0
    pngs = list(tmp_path.glob("*.png"))
    assert pngs
    for png in pngs:
        side = json.loads(png.with_suffix(".png.json").read_text())
        assert side["versions"]["rmtfl"] and "params" in side


def test_unknown_figure_is_refused(capsys):
    assert main(["figures", "nope"]) == 2
    assert "figure must be one of" in capsys.readouterr().err
