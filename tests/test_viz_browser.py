"""The HTML page in a real browser: headless Chromium driven by Playwright.

Skips when Playwright or Chromium is missing (.ci/setup-browser.sh installs both).
Screenshots are kept under tests/artifacts/.
"""
import os
import shutil

import pytest

import retrograd
from retrograd import viz

os.environ.setdefault("PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD", "1")
sync_api = pytest.importorskip("playwright.sync_api", reason="playwright is not installed")

CHROMIUM = os.environ.get("RETROGRAD_CHROMIUM") or shutil.which("chromium") or "/usr/bin/chromium"
if not os.path.exists(CHROMIUM):
    pytest.skip("chromium is not installed", allow_module_level=True)

ARTIFACTS = os.path.join(os.path.dirname(__file__), "artifacts")


@pytest.fixture(scope="module")
def browser():
    with sync_api.sync_playwright() as p:
        try:
            b = p.chromium.launch(executable_path=CHROMIUM,
                                  args=["--headless", "--no-sandbox", "--disable-gpu"])
        except Exception as e:  # a broken browser install is not a failure of the page
            pytest.skip(f"chromium did not start: {e}")
        yield b
        b.close()


def _open(browser, path):
    page = browser.new_page(viewport={"width": 1200, "height": 800})
    page.set_default_timeout(10_000)
    errors = []
    page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.on("request", lambda r: errors.append(f"network request: {r.url}")
            if not r.url.startswith(("file:", "data:", "about:")) else None)
    page.goto("file://" + os.path.abspath(path))
    page.wait_for_selector(".rg-node")
    return page, errors


def test_page_details_and_step_through(browser, tmp_path):
    x = retrograd.tensor(1., requires_grad=True)
    y = x ** 2
    z = y + 1
    with retrograd.autograd.trace() as tr:
        z.backward()
    g = viz.graph(z, show_saved=True, trace=tr)
    path = g.save(tmp_path / "walk.html")
    page, errors = _open(browser, path)
    pow_id = g.node_of(y.grad_fn).id

    # A click on a node shows its details.
    page.click(".rg-node.leaf")
    text = page.inner_text("#rg-details")
    assert "leaf" in text and "torch.float32" in text and "grad" in text
    page.click(f".rg-node[data-id='{pow_id}'] rect")
    text = page.inner_text("#rg-details")
    assert "PowBackward0" in text and "saved tensors freed" in text

    # The step-through advances through the walk.
    assert page.inner_text("#rg-step-label") == "backward: 3 steps"
    page.click("#rg-next")
    assert page.inner_text("#rg-step-label") == "step 1/3: AddBackward0"
    assert page.locator(".rg-node.rg-current").count() == 1
    page.click("#rg-next")
    assert page.inner_text("#rg-step-label") == "step 2/3: PowBackward0"
    assert "2." in page.inner_text("#rg-step")
    assert page.locator(".rg-edge.rg-flow").count() == 1
    page.click("#rg-next")
    assert page.inner_text("#rg-step-label") == "step 3/3: AccumulateGrad"
    assert page.is_disabled("#rg-next")
    page.click("#rg-prev")
    assert page.inner_text("#rg-step-label") == "step 2/3: PowBackward0"

    # Zoom and pan change the view without errors.
    before = page.get_attribute("#rg-viewport", "transform")
    page.click("#rg-zin")
    page.mouse.move(300, 300)
    page.mouse.wheel(0, -200)
    assert page.get_attribute("#rg-viewport", "transform") != before

    # Find a node by name.
    page.fill("#rg-find", "y")
    page.press("#rg-find", "Enter")
    assert page.locator(".rg-node.rg-selected").count() == 1
    assert "intermediate" in page.inner_text("#rg-details")

    os.makedirs(ARTIFACTS, exist_ok=True)
    page.screenshot(path=os.path.join(ARTIFACTS, "viz_step_through.png"))
    assert errors == []
    page.close()


def test_page_module_groups_collapse(browser, tmp_path):
    x = retrograd.ones(4, requires_grad=True)
    with viz.scope("encoder"):
        h = (x * 2).tanh()
        with viz.scope("inner"):
            h = h.exp()
    loss = (h * x).sum()
    path = viz.graph(loss).save(tmp_path / "groups.html")
    page, errors = _open(browser, path)
    visible = page.locator(".rg-node:visible").count()
    assert page.locator("#rg-groups input").count() == 2
    page.locator("#rg-groups input[data-group='encoder']").check()
    assert page.locator(".rg-fold[data-group='encoder']").is_visible()
    assert "encoder: " in page.text_content(".rg-fold[data-group='encoder']")
    assert page.locator(".rg-node:visible").count() < visible
    page.click(".rg-fold[data-group='encoder']")          # a click on the box opens it again
    assert page.locator(".rg-node:visible").count() == visible
    os.makedirs(ARTIFACTS, exist_ok=True)
    page.screenshot(path=os.path.join(ARTIFACTS, "viz_groups.png"))
    assert errors == []
    page.close()


def test_step_through_brings_the_node_into_view(browser, tmp_path):
    x = retrograd.ones(2, requires_grad=True)
    y = x
    for _ in range(60):
        y = (y * 1.5).tanh()
    s = y.sum()
    with retrograd.autograd.trace() as tr:
        s.backward()
    path = viz.graph(s, trace=tr).save(tmp_path / "tall.html")
    page, errors = _open(browser, path)
    page.click("#rg-next")
    box = page.locator(".rg-node.rg-current rect").bounding_box()
    canvas = page.locator("#rg-canvas").bounding_box()
    assert canvas["y"] <= box["y"] and box["y"] + box["height"] <= canvas["y"] + canvas["height"]
    assert errors == []
    page.close()


def test_page_large_graph_folded(browser, tmp_path):
    x = retrograd.ones(2, requires_grad=True)
    y = x
    for i in range(4):
        with viz.scope(f"block{i}"):
            for _ in range(1000):
                y = y * 1.0
    path = viz.graph(y.sum()).save(tmp_path / "big.html")
    page, errors = _open(browser, path)
    assert page.locator(".rg-node.fold").count() == 4
    page.click(".rg-node.fold >> nth=0")
    assert "nodes" in page.inner_text("#rg-details")
    assert errors == []
    page.close()
