"""The package under test is the one installed, and it says what it is."""

import os
import pathlib

import gridarena


def test_ci_tests_the_installed_wheel_not_the_source_tree():
    where = pathlib.Path(gridarena.__file__).resolve()
    source = pathlib.Path(__file__).resolve().parents[1] / "gridarena"
    if os.environ.get("GRIDARENA_EXPECT_WHEEL") == "1":
        assert "site-packages" in where.parts, where
        assert where.parent != source, where
    # Either way the compiled module sits beside the Python sources it was installed with.
    assert any(p.name.startswith("_gridarena") for p in where.parent.iterdir()), where
