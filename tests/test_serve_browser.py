"""`lit serve` in a real browser: headless Chromium driven through Selenium (WebDriver).

The test starts ``lit serve`` as a user would (with the stand-in ACE of
``tests/fake_ace.py``, see its docstring, and a tiny local language model
so that candidates have scores), then drives the page: sentence → readings
and their DMRS graphs → chains → candidates, toggles another reading and
back, and does the same for an NLI pair, checking what is on the screen.

Screenshots go to ``$LIT_SCREENSHOT_DIR`` (else the test's temporary
directory); their paths are printed (``pytest -s`` shows them).

Needs Debian's ``chromium`` and ``chromium-driver`` (``.ci/run`` installs
them where it can) and the ``selenium`` package; skipped with the reason
where one is missing.
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest

pytest.importorskip("starlette", reason="lit serve needs the 'serve' extra (starlette)")
pytest.importorskip("uvicorn", reason="lit serve needs the 'serve' extra (uvicorn)")
pytest.importorskip("selenium", reason="the browser test needs selenium (the 'dev' extra)")

from test_serve import BOY, DOG, start_lit_serve, stop  # noqa: E402

BROWSERS = ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable")
WAIT = 60  # seconds: a bound for a hang, not a timing assertion


def _browser() -> tuple[str, str]:
    browser = os.environ.get("LIT_CHROMIUM") or next(
        (p for p in map(shutil.which, BROWSERS) if p), None)
    driver = os.environ.get("LIT_CHROMEDRIVER") or shutil.which("chromedriver")
    if browser is None or driver is None:
        missing = " and ".join(n for n, p in (("chromium", browser), ("chromedriver", driver))
                               if p is None)
        pytest.skip(f"no {missing} found: apt-get install chromium chromium-driver "
                    "(or set LIT_CHROMIUM / LIT_CHROMEDRIVER)")
    return browser, driver


@pytest.fixture
def browser(monkeypatch):
    from selenium import webdriver
    from selenium.common.exceptions import WebDriverException
    from selenium.webdriver.chrome.options import Options
    from selenium.webdriver.chrome.service import Service

    binary, driver_path = _browser()
    monkeypatch.setenv("SE_OFFLINE", "true")  # never let Selenium fetch a driver or browser
    options = Options()
    options.binary_location = binary
    for arg in ("--headless=new", "--disable-gpu", "--disable-dev-shm-usage",
                "--window-size=1400,1000", "--hide-scrollbars", "--no-first-run",
                "--disable-extensions", "--disable-background-networking"):
        options.add_argument(arg)
    if os.geteuid() == 0:
        options.add_argument("--no-sandbox")  # Chromium refuses to run as root otherwise
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    try:
        driver = webdriver.Chrome(service=Service(driver_path), options=options)
    except WebDriverException as exc:
        pytest.skip(f"cannot start headless Chromium ({binary}, {driver_path}): "
                    f"{str(exc).strip().splitlines()[0]}")
    try:
        yield driver
    finally:
        driver.quit()


@pytest.fixture(scope="module")
def tiny_lm(tmp_path_factory) -> Path:
    pytest.importorskip("tokenizers", reason="the tiny test LM needs tokenizers")
    from test_rerank import build_tiny_gpt2

    return build_tiny_gpt2(tmp_path_factory.mktemp("lm") / "tiny-gpt2")


@pytest.fixture
def server(tmp_path, tiny_lm):
    proc, url, _ = start_lit_serve(tmp_path, "--lm", str(tiny_lm), "--device", "cpu",
                                   "--workers", "2")
    try:
        yield url
    finally:
        stop(proc)


@pytest.fixture
def shots(tmp_path) -> Path:
    where = Path(os.environ.get("LIT_SCREENSHOT_DIR") or tmp_path / "screenshots")
    where.mkdir(parents=True, exist_ok=True)
    return where


def screenshot(driver, path: Path) -> Path:
    """The whole page as a PNG at *path*; the path is printed."""
    height = driver.execute_script("window.scrollTo(0, 0); "
                                   "return document.documentElement.scrollHeight")
    driver.set_window_size(1400, min(max(height, 800) + 40, 12000))
    driver.save_screenshot(str(path))
    driver.set_window_size(1400, 1000)
    print(f"screenshot: {path}")
    return path


def test_sentence_readings_chains_candidates_in_chromium(browser, server, shots):
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import WebDriverWait

    d = browser
    wait = WebDriverWait(d, WAIT)
    css = d.find_elements
    d.get(server + "/")
    wait.until(lambda d: d.find_element(By.TAG_NAME, "body").get_attribute("data-ready"))
    setup = d.find_element(By.ID, "setup").text
    assert "grammar erg-1214" in setup and "2 ACE worker(s)" in setup and "tiny-gpt2" in setup

    # sentence -> readings
    d.find_element(By.ID, "sentence").send_keys(BOY)
    d.find_element(By.ID, "parse-button").click()
    wait.until(lambda d: len(css(By.CSS_SELECTOR, "#readings .reading")) == 7)
    assert "reading 2 of 7: the first candidate reading that regenerates the sentence" in \
        d.find_element(By.CSS_SELECTOR, ".select-reason").text
    cards = css(By.CSS_SELECTOR, "#readings .reading")
    chosen = cards[2]
    assert "in-use" in chosen.get_attribute("class")
    assert chosen.find_element(By.CSS_SELECTOR, "input[type=radio]").is_selected()
    badges = [b.text for b in chosen.find_elements(By.CSS_SELECTOR, ".badge")]
    assert badges == ["selected (roundtrip)", "candidate", "round-trips", "index: _do_v_1"]
    # its DMRS graph: predicates as nodes, roles as labelled arcs, the index highlighted
    graph = chosen.find_element(By.CSS_SELECTOR, "svg.dmrs")
    assert graph.is_displayed() and graph.size["width"] > 300 and graph.size["height"] > 80
    preds = [n.get_attribute("data-predicate")
             for n in graph.find_elements(By.CSS_SELECTOR, "g.node")]
    assert preds == ["_a_q", "_boy_n_1", "_do_v_1", "_a_q", "compound", "udef_q", "_card_n_1",
                     "_trick_n_1"]
    index = graph.find_elements(By.CSS_SELECTOR, "g.node.index")
    assert [n.get_attribute("data-predicate") for n in index] == ["_do_v_1"]
    roles = sorted(t.text for t in graph.find_elements(By.CSS_SELECTOR, "g.link text.role"))
    assert roles == sorted(["RSTR/H", "ARG1/NEQ", "ARG2/NEQ", "RSTR/H", "ARG1/EQ", "ARG2/NEQ",
                            "RSTR/H"])
    assert "INDEX" in graph.find_element(By.CSS_SELECTOR, "g.node.index text.tag").text
    # a fragment analysis says why it is not a candidate
    assert "not a candidate: a fragment analysis (unknown EP)" in cards[0].text
    assert "does not round-trip" in cards[3].text

    # chains -> candidates with scores
    rules = d.find_element(By.ID, "rules")
    rules.clear()
    rules.send_keys("p,pa,i,n")
    preview = d.find_element(By.ID, "chain-preview").text
    for name, phenomenon in (("past", "tense"), ("passive", "voice"),
                             ("itcleft_arg1", "cleft"), ("negation", "negation")):
        assert f"{name} {phenomenon}" in preview
    d.find_element(By.ID, "transform-button").click()
    wait.until(lambda d: len(css(By.CSS_SELECTOR, "#results .result")) == 4)
    results = css(By.CSS_SELECTOR, "#results .result")
    assert [r.get_attribute("data-spec") for r in results] == ["p", "pa", "i", "n"]
    assert all("ok" in r.get_attribute("class").split() for r in results)
    chosen_text = [r.find_element(By.CSS_SELECTOR, ".chosen-sentence").text for r in results]
    assert chosen_text[0] == "A boy did a card trick."
    assert chosen_text[1] == "A card trick is done by a boy."
    assert chosen_text[2] in ("It is a boy that does a card trick.",
                              "It is a boy which does a card trick.",
                              "It is a boy who does a card trick.")
    assert chosen_text[3] in ("A boy doesn't do a card trick.", "A boy does not do a card trick.")
    cleft = results[2].find_elements(By.CSS_SELECTOR, "table.candidates tr")[1:]
    assert len(cleft) == 3
    scores = [float(row.find_element(By.CSS_SELECTOR, "td.score").text) for row in cleft]
    assert scores == sorted(scores) and all(s > 0 for s in scores)
    assert cleft[0].find_element(By.CSS_SELECTOR, "td.sentence").text == chosen_text[2]
    assert "perplexity" in results[0].find_element(By.CSS_SELECTOR, ".chosen").text
    assert "reading 2 (the selected one)" in d.find_element(By.ID, "results-note").text
    screenshot(d, shots / "serve.png")

    # another reading: the chains run again on it, and each refusal shows its reason
    cards[3].find_element(By.CSS_SELECTOR, "input[type=radio]").click()
    wait.until(lambda d: "reading 3 (your choice" in d.find_element(By.ID, "results-note").text)
    results = css(By.CSS_SELECTOR, "#results .result")
    assert [r.get_attribute("data-spec") for r in results] == ["p", "pa", "i", "n"]
    for r in results:
        assert "skipped" in r.get_attribute("class").split()
        assert r.find_element(By.CSS_SELECTOR, ".reason").text.startswith(
            ("no-realization:", "inapplicable:"))
    assert "in-use" in css(By.CSS_SELECTOR, "#readings .reading")[3].get_attribute("class")
    screenshot(d, shots / "serve-reading3.png")
    css(By.CSS_SELECTOR, "#readings .reading")[2].find_element(
        By.CSS_SELECTOR, "input[type=radio]").click()
    wait.until(lambda d: "reading 2 (the selected one)" in
               d.find_element(By.ID, "results-note").text)
    assert all("ok" in r.get_attribute("class").split()
               for r in css(By.CSS_SELECTOR, "#results .result"))

    # an NLI pair, pasted as an SNLI line: new labels with the table rows behind them
    box = d.find_element(By.ID, "sentence")
    box.clear()
    box.send_keys(json.dumps({"sentence1": BOY, "sentence2": DOG, "gold_label": "entailment",
                              "pairID": "x1"}))
    d.find_element(By.ID, "parse-button").click()
    assert d.find_element(By.ID, "mode-pair").get_attribute("aria-selected") == "true"
    assert d.find_element(By.ID, "premise").get_attribute("value") == BOY
    assert d.find_element(By.ID, "hypothesis").get_attribute("value") == DOG
    assert d.find_element(By.ID, "gold").get_attribute("value") == "entailment"
    wait.until(lambda d: len(css(By.CSS_SELECTOR, "#readings .sentence-block")) == 2
               and css(By.CSS_SELECTOR, '.sentence-block[data-sentence="1"] .reading'))
    rules = d.find_element(By.ID, "rules")
    rules.clear()
    rules.send_keys("m;o,o;n,q;q,f;p+i")
    d.find_element(By.ID, "transform-button").click()
    wait.until(lambda d: len(css(By.CSS_SELECTOR, "#results .result")) == 4
               and d.find_element(By.TAG_NAME, "body").get_attribute("data-busy") == "false")
    cards = {r.get_attribute("data-spec"): r for r in css(By.CSS_SELECTOR, "#results .result")}
    assert list(cards) == ["m;o", "o;n", "q;q", "f;p+i"]
    m_o = cards["m;o"].find_element(By.CSS_SELECTOR, ".label-box").text
    assert "entailment → neutral" in m_o and "table row m;o (paper)" in m_o
    assert cards["m;o"].find_element(By.CSS_SELECTOR, ".premise .chosen-sentence").text == \
        "A boy may do a card trick."
    assert "entailment → contradiction" in \
        cards["o;n"].find_element(By.CSS_SELECTOR, ".label-box").text
    assert "unlabeled: question yields a non-proposition" in cards["q;q"].text
    assert cards["f;p+i"].find_element(By.CSS_SELECTOR, ".reason").text.startswith(
        "no-realization: hypothesis:")
    screenshot(d, shots / "serve-pair.png")

    severe = [e for e in d.get_log("browser") if e.get("level") == "SEVERE"]
    assert severe == []  # no script errors, no blocked (off-site) loads


@pytest.mark.ace
def test_real_ace_in_chromium(browser, tmp_path, tiny_lm, shots):
    """With a real ACE and ERG 1214: "The dog chased the cat." and the chains p,pa,i,n."""
    from conftest import real_ace
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import WebDriverWait

    ace, image = real_ace("erg-1214")
    proc, url, _ = start_lit_serve(tmp_path, "--lm", str(tiny_lm), "--device", "cpu",
                                   env={"LIT_ACE": str(ace), "LIT_GRAMMAR_ERG_1214": str(image)})
    try:
        d = browser
        wait = WebDriverWait(d, 300)
        d.get(url + "/")
        wait.until(lambda d: d.find_element(By.TAG_NAME, "body").get_attribute("data-ready"))
        d.find_element(By.ID, "sentence").send_keys("The dog chased the cat.")
        d.find_element(By.ID, "parse-button").click()
        wait.until(lambda d: d.find_elements(By.CSS_SELECTOR, "#readings .reading"))
        chosen = d.find_element(By.CSS_SELECTOR, "#readings .reading.in-use")
        assert chosen.find_elements(By.CSS_SELECTOR, "svg.dmrs g.node.index")
        rules = d.find_element(By.ID, "rules")
        rules.clear()
        rules.send_keys("p,pa,i,n")
        d.find_element(By.ID, "transform-button").click()
        wait.until(lambda d: len(d.find_elements(By.CSS_SELECTOR, "#results .result")) == 4)
        cards = {r.get_attribute("data-spec"): r
                 for r in d.find_elements(By.CSS_SELECTOR, "#results .result")}
        assert "TENSE is already past" in cards["p"].text
        for spec in ("pa", "i", "n"):
            assert "ok" in cards[spec].get_attribute("class").split(), cards[spec].text
            assert cards[spec].find_elements(By.CSS_SELECTOR, "table.candidates td.score")
        screenshot(d, shots / "serve-real-ace.png")
    finally:
        stop(proc)
