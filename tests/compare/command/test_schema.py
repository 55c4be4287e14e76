"""compare/command/schema.py: the command line's schema is made from the one declaration of the options."""

from __future__ import annotations


def test_the_options_are_declared_once_and_the_command_line_schema_is_derived():
    """Options (typed, with defaults) is the one declaration of the report's options; schema.CompareArgs, the schema the
    arguments are read through, is made from it: the same names, each default as the command line writes it (a list
    as comma-separated text), and the options the command line reads alone are its own (experiment, out, log...)."""
    from dataclasses import fields

    from judgebench.compare.base.report_model import Options
    from judgebench.compare.command import schema, validate

    declared = {f.name: f.default for f in fields(Options)}
    derived = {f.name: f.default for f in fields(schema.CompareArgs)}
    assert (
        len(schema.SHARED) == 19
        and set(schema.SHARED) == (set(derived) - set(schema.COMMAND))
        and set(schema.SHARED) <= set(declared)
    )
    for name in schema.SHARED:
        want = declared[name]
        want = (",".join(want) or None) if isinstance(want, tuple) else (None if name in schema.TEXT_VALUED else want)
        assert derived[name] == want, name
    assert derived["calibration_k"] == "5,10,20,all" and derived["plan"] is None and derived["bootstrap"] == 1000
    assert validate.options(schema.parse(["experiment=e"])) == Options()  # every default, through the command line


def test_a_key_the_schema_lacks_or_a_value_of_the_wrong_type_is_one_line_naming_it():
    import pytest

    from judgebench.compare.command import schema
    from judgebench.exceptions import CompareError

    with pytest.raises(CompareError, match=r"^unexpected argument 'judgs=a'; expected key=value with key in \["):
        schema.parse(["experiment=e", "judgs=a"])
    with pytest.raises(CompareError, match=r"^alpha='x': expected a number between 0 and 1$"):
        schema.parse(["experiment=e", "alpha=x"])
    with pytest.raises(CompareError, match=r"^unexpected argument 'calibration_human_labels=f'"):
        schema.parse(["experiment=e", "calibration_human_labels=f"])  # only the dotted spelling is an option
    with pytest.raises(CompareError, match=r"^experiment=NAME is required"):
        schema.parse([])


def test_the_dotted_key_and_a_name_that_looks_like_an_interpolation_are_read_as_written():
    from judgebench.compare.command import schema

    args = schema.parse(["experiment=e", "calibration.human_labels=f.tsv", "judges=${x}", "seed=3"])
    assert args["calibration_human_labels"] == "f.tsv" and args["judges"] == "${x}" and args["seed"] == 3
    assert args["given"] == {"experiment": "e", "calibration_human_labels": "f.tsv", "judges": "${x}", "seed": "3"}
    assert "calibration.human_labels" in schema.KEYS and "calibration_human_labels" not in schema.KEYS
