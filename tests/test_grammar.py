"""Grammar profiles, the registry and grammar resolution (lit.grammar)."""

from __future__ import annotations

import json
import os
import stat
import sys
import threading
from pathlib import Path

import pytest

from lit.ace import probe_version as ace_version_of
from lit.errors import ACEError, ChecksumError, GrammarError
from lit.grammar import (
    Download,
    Grammar,
    GrammarProfile,
    Installation,
    current_platform,
    default_grammar,
    file_sha256,
    grammar_env_var,
    list_profiles,
    lit_home,
    load_profile,
    read_registry,
    register,
    registry_path,
    resolve_grammar,
    unregister,
)

SHIPPED = ["erg-1214", "erg-2018", "erg-2020", "erg-2023", "erg-2025"]
MODALS = {
    "may": "_may_v_modal",
    "might": "_might_v_modal",
    "must": "_must_v_modal",
    "can": "_can_v_modal",
    "could": "_could_v_modal",
    "should": "_should_v_modal",
    "would": "_would_v_modal",
}

# A test double for the ACE binary (ACE cannot be obtained on this machine):
# it only answers `-V` the way ACE 0.9.34 does.
FAKE_ACE = """#!/bin/sh
# test double for ACE (not available here): answers -V like ACE 0.9.34
if [ "$1" = "-V" ]; then
  echo "ACE version 0.9.34"
  echo "compiled at 00:00:00 on Jan  1 2021"
  exit 0
fi
echo "fake ace: unsupported arguments: $*" >&2
exit 1
"""

GOOD_PROFILE = """\
name = "{name}"
erg_version = "9999"
ace_version = "0.9.34"
description = "a test grammar"

[ace.linux-x86_64]
url = "http://127.0.0.1:1/ace-0.9.34-x86-64.tar.gz"
sha256 = ""
member = "ace-0.9.34/ace"

[image.linux-x86_64]
url = "http://127.0.0.1:1/test-image.dat.bz2"
sha256 = ""

[semantics]
negation = "neg"
passive = "parg_d"
itcleft = ""
itcleft_unsupported = "no"
modal_aspect = "minus"

[semantics.modals]
may = "_may_v_modal"

[semantics.modals_unsupported]
"""


def write_script(path: Path, text: str) -> Path:
    path.write_text(text)
    path.chmod(path.stat().st_mode | stat.S_IXUSR)
    return path


@pytest.fixture
def fake_ace(tmp_path) -> Path:
    return write_script(tmp_path / "ace", FAKE_ACE)


def write_user_profile(home: Path, text: str, name: str = "test-erg") -> Path:
    (home / "grammars").mkdir(exist_ok=True)
    path = home / "grammars" / f"{name}.toml"
    path.write_text(text)
    return path


def make_entry(home: Path, name: str, image: Path, ace: Path | None = None) -> Installation:
    entry = Installation(
        name=name,
        image=image,
        source="added",
        image_sha256=file_sha256(image),
        installed="2026-01-01T00:00:00+00:00",
        ace=ace,
        ace_version="0.9.34" if ace else None,
        ace_sha256=file_sha256(ace) if ace else None,
    )
    register(entry, home=home)
    return entry


# --------------------------------------------------------------------------
# shipped profiles


@pytest.mark.parametrize("name", SHIPPED)
def test_shipped_profile_loads(name, lit_home):
    p = load_profile(name, home=lit_home)
    assert p.name == name
    assert p.erg_version == name.split("-")[1]
    assert p.ace_version == "0.9.34"
    assert p.path is not None and p.path.name == f"{name}.toml"
    assert "linux-x86_64" in p.ace
    assert p.ace["linux-x86_64"].member == "ace-0.9.34/ace"
    assert all(dl.sha256 is None for dl in [*p.ace.values(), *p.image.values()])
    sem = p.semantics
    assert set(sem) == {
        "negation", "passive", "itcleft", "itcleft_unsupported", "modal_aspect",
        "modals", "modals_unsupported",
    }
    assert sem["negation"] == "neg"
    assert sem["modals"] == MODALS
    assert sem["modals_unsupported"] == {}


def test_semantic_conventions_differ_by_version(lit_home):
    old = load_profile("erg-1214", home=lit_home).semantics
    assert (old["passive"], old["itcleft"], old["itcleft_unsupported"], old["modal_aspect"]) == (
        "parg_d", "_be_v_itcleft", "", "minus")
    for name in SHIPPED[1:]:
        sem = load_profile(name, home=lit_home).semantics
        assert sem["passive"] == "icons:topic"
        assert sem["itcleft"] == ""
        assert sem["itcleft_unsupported"] == f"{name} does not generate it-clefts"
        assert sem["modal_aspect"] == "inherit"


def test_image_downloads(lit_home):
    urls = {n: load_profile(n, home=lit_home).image for n in SHIPPED}
    assert urls["erg-1214"]["linux-x86_64"].url == (
        "http://sweaglesw.org/linguistics/ace/download/erg-1214-x86-64-0.9.34.dat.bz2")
    assert urls["erg-2025"]["linux-x86_64"].url == (
        "https://github.com/delph-in/erg/releases/download/2025/erg-2025-x86-64-0.9.34.dat.bz2")
    # no published image for 2020 and 2023: the profile says to compile
    for name in ("erg-2020", "erg-2023"):
        p = load_profile(name, home=lit_home)
        assert p.image == {}
        assert f"lit grammar compile {name}" in (p.source or "")


def test_list_and_default(lit_home):
    assert [p.name for p in list_profiles(home=lit_home)] == SHIPPED
    assert default_grammar(home=lit_home) == "erg-1214"
    assert [p.name for p in list_profiles(home=lit_home) if p.default] == ["erg-1214"]


def test_profile_round_trip(lit_home):
    for p in list_profiles(home=lit_home):
        again = GrammarProfile.from_dict(p.to_dict())
        assert again == p
        assert again.path == p.path
        json.dumps(p.to_dict())  # JSON-serializable


def test_profile_is_hashable_and_frozen(lit_home):
    p = load_profile("erg-1214", home=lit_home)
    hash(p)
    with pytest.raises(AttributeError):
        p.name = "x"  # type: ignore[misc]
    assert Download.from_dict(Download("http://x/y", None, "m").to_dict()) == Download(
        "http://x/y", None, "m")


# --------------------------------------------------------------------------
# user profiles and validation


def test_user_profile_is_found_and_overrides(lit_home):
    write_user_profile(lit_home, GOOD_PROFILE.format(name="test-erg"))
    assert load_profile("test-erg", home=lit_home).description == "a test grammar"
    assert "test-erg" in [p.name for p in list_profiles(home=lit_home)]
    # a user profile replaces the shipped one of the same name
    text = GOOD_PROFILE.format(name="erg-1214")
    write_user_profile(lit_home, text, name="erg-1214")
    assert load_profile("erg-1214", home=lit_home).erg_version == "9999"
    # ... and stays the default although the user's profile does not say so
    assert not load_profile("erg-1214", home=lit_home).default
    assert default_grammar(home=lit_home) == "erg-1214"


def test_unknown_grammar(lit_home):
    with pytest.raises(GrammarError, match=r"unknown grammar 'erg-9' \(known: erg-1214"):
        load_profile("erg-9", home=lit_home)


BAD_PROFILES = [
    # (edit of GOOD_PROFILE, expected message fragment)
    (("description = ", "colour = \"red\"\ndescription = "), "unknown key 'colour'"),
    (('erg_version = "9999"\n', ""), "missing required key 'erg_version'"),
    (("[image.linux-x86_64]", "[image.linux-sparc]"), "key 'image.linux-sparc': unknown platform"),
    (('url = "http://127.0.0.1:1/test-image.dat.bz2"\nsha256 = ""',
      'url = "http://127.0.0.1:1/test-image.dat.bz2"\nsha256 = "abc"'),
     "key 'image.linux-x86_64.sha256': 'abc' is not a sha256"),
    (('sha256 = ""\nmember', 'sha256 = ""\nsize = 3\nmember'),
     "unknown key 'ace.linux-x86_64.size'"),
    (('member = "ace-0.9.34/ace"\n', ""), "missing key 'ace.linux-x86_64.member'"),
    (('url = "http://127.0.0.1:1/test-image.dat.bz2"', 'url = "ftp://x/y.dat.bz2"'),
     "key 'image.linux-x86_64.url'"),
    (('ace_version = "0.9.34"', "ace_version = 34"), "key 'ace_version' must be a string"),
    (('description = "a test grammar"', 'description = "a test grammar'), "invalid TOML"),
    (("[semantics]", "[semanticz]"), "unknown key 'semanticz'"),
]


@pytest.mark.parametrize("edit,message", BAD_PROFILES, ids=[m for _, m in BAD_PROFILES])
def test_malformed_profile_names_file_and_key(lit_home, edit, message):
    old, new = edit
    text = GOOD_PROFILE.format(name="test-erg")
    assert old in text
    path = write_user_profile(lit_home, text.replace(old, new, 1))
    with pytest.raises(GrammarError) as info:
        load_profile("test-erg", home=lit_home)
    assert str(path) in str(info.value)
    assert message in str(info.value)
    # listing fails loudly too (no silently dropped profile)
    with pytest.raises(GrammarError, match="test-erg.toml"):
        list_profiles(home=lit_home)


def test_invalid_toml_names_line(lit_home):
    path = write_user_profile(lit_home, 'name = "test-erg"\nerg_version = \n')
    with pytest.raises(GrammarError, match=rf"{path}: invalid TOML: .*line 2"):
        load_profile("test-erg", home=lit_home)


def test_name_must_match_file(lit_home):
    write_user_profile(lit_home, GOOD_PROFILE.format(name="other"))
    with pytest.raises(GrammarError, match="key 'name': 'other' does not match the file name"):
        load_profile("test-erg", home=lit_home)


def test_from_dict_names_dict_source():
    with pytest.raises(GrammarError, match=r"<dict>: missing required key 'name'"):
        GrammarProfile.from_dict({"erg_version": "1"})


def test_two_user_defaults_are_an_error(lit_home):
    for name in ("a-erg", "b-erg"):
        text = GOOD_PROFILE.format(name=name).replace(
            'description = ', 'default = true\ndescription = ')
        write_user_profile(lit_home, text, name=name)
    with pytest.raises(GrammarError, match="several grammar profiles"):
        default_grammar(home=lit_home)


def test_user_default_wins(lit_home):
    text = GOOD_PROFILE.format(name="test-erg").replace(
        'description = ', 'default = true\ndescription = ')
    write_user_profile(lit_home, text)
    assert default_grammar(home=lit_home) == "test-erg"


# --------------------------------------------------------------------------
# places


def test_lit_home_and_env_var_names(tmp_path):
    assert lit_home({"LIT_HOME": str(tmp_path)}) == tmp_path
    assert lit_home({}).name == "lit-mrs"
    assert grammar_env_var("erg-1214") == "LIT_GRAMMAR_ERG_1214"
    system, _, machine = current_platform().partition("-")
    assert system and machine
    if sys.platform.startswith("linux") and machine == "x86_64":
        assert current_platform() == "linux-x86_64"


# --------------------------------------------------------------------------
# registry


def test_registry_round_trip(lit_home, tmp_path):
    image = tmp_path / "g.dat"
    image.write_bytes(b"image")
    entry = make_entry(lit_home, "erg-1214", image)
    assert read_registry(lit_home) == {"erg-1214": entry}
    data = json.loads(registry_path(lit_home).read_text())
    assert data["version"] == 1
    assert data["grammars"]["erg-1214"]["image_sha256"] == file_sha256(image)
    assert unregister("erg-1214", home=lit_home)
    assert not unregister("erg-1214", home=lit_home)
    assert read_registry(lit_home) == {}
    # atomic writes leave no temporary files behind
    assert sorted(p.name for p in lit_home.iterdir()) == ["registry.json", "registry.lock"]


def test_missing_registry_is_empty(lit_home):
    assert read_registry(lit_home) == {}


def test_corrupt_registry(lit_home):
    registry_path(lit_home).write_text("{not json")
    with pytest.raises(GrammarError, match="registry.json: the grammar registry is corrupt"):
        read_registry(lit_home)


def test_registry_concurrent_readers_and_writers(lit_home, tmp_path):
    image = tmp_path / "g.dat"
    image.write_bytes(b"image")
    make_entry(lit_home, "erg-1214", image)
    errors: list[BaseException] = []
    stop = threading.Event()

    def read() -> None:
        while not stop.is_set():
            try:
                assert "erg-1214" in read_registry(lit_home)
            except BaseException as exc:  # noqa: B036 - collected and re-raised below
                errors.append(exc)
                return

    readers = [threading.Thread(target=read) for _ in range(3)]
    for t in readers:
        t.start()
    try:
        for i in range(40):
            make_entry(lit_home, f"g{i % 4}", image)
    finally:
        stop.set()
        for t in readers:
            t.join()
    assert not errors
    assert set(read_registry(lit_home)) == {"erg-1214", "g0", "g1", "g2", "g3"}


# --------------------------------------------------------------------------
# resolution


def test_not_installed(lit_home):
    with pytest.raises(GrammarError) as info:
        resolve_grammar("erg-1214", home=lit_home)
    message = str(info.value)
    assert "lit grammar install erg-1214" in message
    assert "lit grammar add erg-1214 --image PATH" in message
    assert "LIT_GRAMMAR_ERG_1214" in message


def test_resolve_registered(lit_home, tmp_path, fake_ace):
    image = tmp_path / "g.dat"
    image.write_bytes(b"image")
    make_entry(lit_home, "erg-1214", image, fake_ace)
    g = resolve_grammar("erg-1214", home=lit_home)
    assert (g.image, g.ace, g.source, g.ace_source, g.ace_version) == (
        image, fake_ace, "added", "added", "0.9.34")
    assert g.profile.semantics["passive"] == "parg_d"
    assert g.name == "erg-1214"
    assert Grammar.from_dict(json.loads(json.dumps(g.to_dict()))) == g
    # home from env
    assert resolve_grammar("erg-1214", env={"LIT_HOME": str(lit_home)}).image == image


def test_changed_file_is_a_checksum_error(lit_home, tmp_path, fake_ace):
    image = tmp_path / "g.dat"
    image.write_bytes(b"image")
    make_entry(lit_home, "erg-1214", image, fake_ace)
    image.write_bytes(b"imagf")
    with pytest.raises(ChecksumError) as info:
        resolve_grammar("erg-1214", home=lit_home)
    message = str(info.value)
    assert "image of grammar erg-1214 changed" in message
    assert "lit grammar install erg-1214" in message and "lit grammar add erg-1214" in message
    # verify=False skips the check
    assert resolve_grammar("erg-1214", home=lit_home, verify=False).image == image
    image.write_bytes(b"image")
    with open(fake_ace, "a") as f:
        f.write("# edited\n")
    with pytest.raises(ChecksumError, match="ACE binary of grammar erg-1214 changed"):
        resolve_grammar("erg-1214", home=lit_home)


def test_missing_registered_file(lit_home, tmp_path):
    image = tmp_path / "g.dat"
    image.write_bytes(b"image")
    make_entry(lit_home, "erg-1214", image)
    image.unlink()
    with pytest.raises(GrammarError, match=r"registered at .*g\.dat is missing.*lit grammar"):
        resolve_grammar("erg-1214", home=lit_home)


def test_env_overrides(lit_home, tmp_path, fake_ace):
    image = tmp_path / "env.dat"
    image.write_bytes(b"env image")
    env = {"LIT_GRAMMAR_ERG_1214": str(image), "LIT_ACE": str(fake_ace)}
    g = resolve_grammar("erg-1214", home=lit_home, env=env)
    assert (g.image, g.ace, g.source, g.ace_source) == (image, fake_ace, "env", "env")
    # the environment wins over the registry
    other = tmp_path / "reg.dat"
    other.write_bytes(b"registered")
    make_entry(lit_home, "erg-1214", other)
    assert resolve_grammar("erg-1214", home=lit_home, env=env).image == image
    only_ace = resolve_grammar("erg-1214", home=lit_home, env={"LIT_ACE": str(fake_ace)})
    assert (only_ace.image, only_ace.source, only_ace.ace_source) == (other, "added", "env")
    # env=None: no overrides at all
    assert resolve_grammar("erg-1214", home=lit_home).image == other


def test_env_override_missing_file(lit_home, tmp_path):
    env = {"LIT_GRAMMAR_ERG_2018": str(tmp_path / "nope.dat")}
    with pytest.raises(GrammarError, match="LIT_GRAMMAR_ERG_2018=.*nope.dat: no such"):
        resolve_grammar("erg-2018", home=lit_home, env=env)
    image = tmp_path / "x.dat"
    image.write_bytes(b"x")
    env = {"LIT_GRAMMAR_ERG_2018": str(image), "LIT_ACE": str(tmp_path / "no-ace")}
    with pytest.raises(GrammarError, match="LIT_ACE=.*no-ace: no such ACE binary"):
        resolve_grammar("erg-2018", home=lit_home, env=env)


# --------------------------------------------------------------------------
# ace -V (real subprocesses running stand-in scripts)


def test_ace_version_of(fake_ace):
    assert ace_version_of(fake_ace) == "0.9.34"


def test_ace_version_of_not_ace(tmp_path):
    script = write_script(tmp_path / "notace", "#!/bin/sh\necho hello\n")
    with pytest.raises(ACEError, match="printed no 'ACE version' line.*hello"):
        ace_version_of(script)


def test_ace_version_of_missing(tmp_path):
    with pytest.raises(ACEError, match="cannot run ACE binary"):
        ace_version_of(tmp_path / "missing")


def test_ace_version_of_hanging(tmp_path):
    script = write_script(tmp_path / "hang", "#!/bin/sh\nexec sleep 30\n")
    with pytest.raises(ACEError, match="did not answer within"):
        ace_version_of(script, timeout=0.5)


def test_profile_env_var(lit_home):
    assert load_profile("erg-2025", home=lit_home).env_var == "LIT_GRAMMAR_ERG_2025"
    assert os.environ.get("LIT_HOME") == str(lit_home)
