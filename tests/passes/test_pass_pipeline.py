"""Pipeline-string parsing and typed option conversion (against test-only passes)."""

from __future__ import annotations

import pytest
from fake_passes import FAKE_REGISTRY, Mark, Needs, Tune

from mixjit.passes.pipeline import PipelineError, build_pipeline, parse_pipeline


def build(text: str):
    return build_pipeline(text, FAKE_REGISTRY)


def error_of(text: str) -> PipelineError:
    with pytest.raises(PipelineError) as info:
        build(text)
    return info.value


def test_empty_pipeline_is_no_passes():
    assert build("") == []
    assert build("   ") == []


def test_names_and_options_with_lists():
    passes = build("mark,tune{budget=1e-3,exhaustive=true,sites=1,2,3,target=a100},mark{text=y}")
    assert passes == [
        Mark(),
        Tune(budget=1e-3, exhaustive=True, sites=[1, 2, 3], target="a100"),
        Mark(text="y"),
    ]


def test_whitespace_is_tolerated_and_separates_options():
    spaced = build("  mark ,\n tune { budget = 0.5  max-iterations=3 , sites = 4 , 5 } , mark ")
    assert spaced == [Mark(), Tune(budget=0.5, max_iterations=3, sites=[4, 5]), Mark()]


def test_quoted_strings_keep_commas_spaces_and_escapes():
    (p,) = build('mark{text="a, b {c}=\\"d\\""}')
    assert p.text == 'a, b {c}="d"'


def test_list_option_types_follow_annotation():
    (p,) = build("tune{scales=0.5,2,names=x,y}")
    assert p.scales == (0.5, 2.0) and isinstance(p.scales, tuple)
    assert p.names == ["x", "y"]
    (single,) = build("tune{sites=7}")
    assert single.sites == [7]


def test_defaults_are_independent_copies():
    a, b = build("tune,tune")
    a.sites.append(1)
    assert b.sites == []


@pytest.mark.parametrize(
    "p",
    [
        Tune(),
        Tune(budget=0.1, target="my gpu, v2", sites=[1, 2], exhaustive=True, scales=(0.25,)),
        Needs(level=3),
        Mark(text='quote"me'),
    ],
)
def test_pipeline_spec_round_trips(p):
    assert build(p.pipeline_spec()) == [p]


def test_pipeline_spec_shows_only_non_default_options():
    assert Tune().pipeline_spec() == "tune"
    assert Tune(budget=0.5, sites=[1, 2]).pipeline_spec() == "tune{budget=0.5,sites=1,2}"


@pytest.mark.parametrize(
    "text, message, column",
    [
        ("mark,,tune", "expected a pass name, got ','", 5),
        ("mark,", "expected a pass name, got end of pipeline", 5),
        ("mark tune", "expected ',' between passes, got 't'", 5),
        ("tune{budget=1", "expected '}' to close the options of pass 'tune'", 13),
        ("tune{budget}", "expected an option 'name=value', got 'b'", 5),
        ("tune{budget=}", "expected a value for option 'budget', got '}'", 12),
        ("tune{budget=1 2}", "expected ',', another option or '}', got '2'", 14),
        ('mark{text="abc}', "unterminated string", 10),
        ("tune{budget=1,budget=2}", "option 'budget' of pass 'tune' is given twice", 14),
    ],
)
def test_syntax_errors_point_at_the_bad_character(text, message, column):
    err = error_of(text)
    assert message in err.message
    assert err.pos == column
    lines = err.render().splitlines()
    assert lines[0] == f"invalid pass pipeline: {err.message}"
    assert lines[1] == f"  {text}"
    assert lines[2] == " " * (2 + column) + "^"


def test_unknown_pass_suggests_close_matches():
    err = error_of("mark,tunee{budget=1}")
    assert err.message.startswith("unknown pass 'tunee'; did you mean 'tune'")
    assert err.pos == 5


def test_unknown_pass_without_close_match_points_to_list_passes():
    err = error_of("zzzzzz")
    assert err.message == "unknown pass 'zzzzzz' (see `mixopt --list-passes`)"


def test_unknown_option_lists_valid_options():
    err = error_of("tune{budgt=1}")
    assert err.message.startswith("pass 'tune' has no option 'budgt'; did you mean 'budget'?")
    assert "valid options: budget, target, max-iterations, exhaustive, sites, scales, names" in err.message
    assert err.pos == 5


def test_option_on_pass_without_options():
    err = error_of("boom{x=1}")
    assert "pass 'boom' has no option 'x'" in err.message
    assert "takes no options" in err.message


@pytest.mark.parametrize(
    "text, message, column",
    [
        ("tune{budget=abc}", "option 'budget' of pass 'tune' expects float, got 'abc'", 12),
        ("tune{max-iterations=1.5}", "option 'max-iterations' of pass 'tune' expects int, got '1.5'", 20),
        ("tune{exhaustive=yes}", "option 'exhaustive' of pass 'tune' expects bool (true or false), got 'yes'", 16),
        ("tune{sites=1,x,3}", "option 'sites' of pass 'tune' expects int, got 'x'", 13),
        ("tune{budget=1,2}", "option 'budget' of pass 'tune' expects float, got a list '1,2'", 14),
        # Only plain decimal text: Python's int()/float() would also take these.
        ("tune{max-iterations=1_0}", "option 'max-iterations' of pass 'tune' expects int, got '1_0'", 20),
        ("tune{sites=1,\u0663}", "option 'sites' of pass 'tune' expects int, got '\u0663'", 13),
        ("tune{budget=1_0.5}", "option 'budget' of pass 'tune' expects float, got '1_0.5'", 12),
    ],
)
def test_wrong_option_types(text, message, column):
    err = error_of(text)
    assert err.message == message
    assert err.pos == column


def test_accepted_number_spellings():
    assert build("tune{max-iterations=+3,budget=-2.5e-3,scales=1,.5,2.,inf}") == [
        Tune(max_iterations=3, budget=-2.5e-3, scales=(1.0, 0.5, 2.0, float("inf")))
    ]


def test_a_pass_can_reject_an_option_value_and_the_error_points_at_it():
    with pytest.raises(PipelineError) as info:
        build_pipeline("dce,canonicalize{max-iterations=0}")
    assert info.value.message == "option 'max-iterations' of pass 'canonicalize' must be at least 1, got 0"
    assert info.value.pos == len("dce,canonicalize{max-iterations=")


def test_missing_required_option():
    err = error_of("mark,needs")
    assert err.message == "pass 'needs' requires option(s) level: write e.g. needs{level=...}"
    assert err.pos == 5
    assert build("needs{level=2}") == [Needs(level=2)]


def test_parse_pipeline_records_columns():
    (spec,) = parse_pipeline("tune{a=1,2, b=x}")
    assert spec.name == "tune" and spec.pos == 0
    assert [(o.key, o.key_pos, o.values, o.value_pos) for o in spec.options] == [
        ("a", 5, ["1", "2"], [7, 9]),
        ("b", 12, ["x"], [14]),
    ]
