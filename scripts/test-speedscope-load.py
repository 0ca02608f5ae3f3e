#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""trace.speedscope.json in speedscope itself, in headless Chromium.

Usage: test-speedscope-load.py [FILE]

FILE (default: the golden file of test_hq_receive, the bytes bfhq writes
for its fixed trace, names with <, >, " and UTF-8) is served with
speedscope's built web app from the npm package (installed once into
build/speedscope/ by npm, and used from there afterwards) on a loopback
port, and opened as speedscope's own page opens a profile from its URL
(#profileURL=...&view=sandwich).  Checks, for each profile in turn (the
"n" key moves to the next): the toolbar names the thread, and the
sandwich view's table lists every frame the profile's events open.  Then
the same file cut in half must not load: the page says so and shows none
of it, so the checks above can fail.  The sandwich table draws only the
rows in view (about 40 here), so a FILE of more frames per profile than
that fails the frames check though speedscope loaded it.  Chromium is driven as
scripts/live-view-test.py drives it (its Browser, over the DevTools
protocol).  Output is TAP; speedscope's page text and Chromium's log stay
in build/speedscope-load/.

Environment: BFT_CHROMIUM, the browser (default chromium).
"""
import functools
import http.server
import importlib.util
import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
VERSION = "1.25.0"
NPM_DIR = os.path.join(ROOT, "build", "speedscope")
APP = os.path.join(NPM_DIR, "node_modules", "speedscope", "dist", "release")
OUT = os.path.join(ROOT, "build", "speedscope-load")
GOLDEN = os.path.join(ROOT, "user", "lib", "tests", "vectors",
                      "hq-names.speedscope.json")
LOAD_TIMEOUT = 30


def live_view():
    spec = importlib.util.spec_from_file_location(
        "live_view_test", os.path.join(ROOT, "scripts", "live-view-test.py"))
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def installed_version():
    try:
        with open(os.path.join(NPM_DIR, "node_modules", "speedscope",
                               "package.json")) as f:
            return json.load(f).get("version")
    except (OSError, ValueError):
        return None


def install(tap):
    """speedscope VERSION under NPM_DIR, fetched only if not there yet."""
    if installed_version() != VERSION:
        os.makedirs(NPM_DIR, exist_ok=True)
        try:
            r = subprocess.run(["npm", "install", "--prefix", NPM_DIR,
                                "--no-save", "--no-audit", "--no-fund",
                                f"speedscope@{VERSION}"],
                               capture_output=True, text=True)
        except OSError as e:
            tap.result(False, f"npm installs speedscope {VERSION}",
                       [f"{e} (scripts/setup-deps.sh installs npm)"])
            return False
        if r.returncode:
            tap.result(False, f"npm installs speedscope {VERSION}",
                       (r.stdout + r.stderr).splitlines()[-20:])
            return False
    good = installed_version() == VERSION and \
        os.path.exists(os.path.join(APP, "index.html"))
    return tap.result(good, f"speedscope {VERSION} (npm) is in "
                      f"{os.path.relpath(NPM_DIR, ROOT)}, with its web app")


def expected(path):
    """[(profile name, [frame names it opens])] as the file says."""
    with open(path, encoding="utf-8") as f:
        doc = json.load(f)
    frames = [fr["name"] for fr in doc["shared"]["frames"]]
    return [(p["name"], sorted({frames[e["frame"]] for e in p["events"]
                                if e["type"] == "O"}))
            for p in doc["profiles"]]


def serve(root):
    handler = functools.partial(QuietHandler, directory=root)
    srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    return srv


class QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args):
        pass


def page_text(lv, browser, session):
    return lv.Browser.eval(browser, session, "document.body ? document.body.innerText : \"\"") or ""


def wait_text(lv, browser, session, pred, timeout=LOAD_TIMEOUT):
    end = time.monotonic() + timeout
    text = ""
    while time.monotonic() < end:
        text = page_text(lv, browser, session)
        if pred(text):
            return True, text
        time.sleep(0.1)
    return False, text


def open_profile(browser, url):
    """A tab on url whose alert() calls are kept in window.__alerts."""
    target = browser.call("Target.createTarget", url="about:blank")["targetId"]
    session = browser.call("Target.attachToTarget", targetId=target,
                           flatten=True)["sessionId"]
    browser.call("Page.enable", session)
    browser.call("Page.addScriptToEvaluateOnNewDocument", session,
                 source="window.__alerts = []; window.alert = "
                        "m => window.__alerts.push(String(m));")
    browser.call("Page.navigate", session, url=url)
    return session


def press(browser, session, key):
    for kind in ("keyDown", "keyUp"):
        browser.call("Input.dispatchKeyEvent", session, type=kind, key=key,
                     text=key if kind == "keyDown" else "")


def check_good(lv, tap, browser, base, path):
    try:
        want = expected(path)
    except (OSError, ValueError, KeyError, IndexError, TypeError) as e:
        tap.result(False, f"{path} is speedscope JSON with its frames in "
                   f"range ({type(e).__name__}: {e})")
        return False
    session = open_profile(browser, f"{base}/index.html#profileURL="
                           f"{base}/good.json&view=sandwich")
    for i, (name, frames) in enumerate(want):
        if i:
            press(browser, session, "n")
        # speedscope's own error ends the wait: nothing more will come
        _, text = wait_text(lv, browser, session,
                            lambda t: "went wrong" in t or name in t and
                            all(f in t for f in frames))
        with open(os.path.join(OUT, f"page-{i + 1}.txt"), "w") as f:
            f.write(text)
        missing = [f for f in [name] + frames if f not in text]
        tap.result(not missing, f"speedscope shows profile {i + 1} of {len(want)}, "
                   f"{name!r}, and its {len(frames)} frames",
                   [f"{len(missing)} names not on the page, first "
                    f"{missing[:10]!r}", f"page text: {text[:300]!r}"]
                   if missing else [])
    return True


def check_broken(lv, tap, browser, base, path):
    want = expected(path)
    session = open_profile(browser, f"{base}/index.html#profileURL="
                           f"{base}/broken.json&view=sandwich")
    alerts = []

    def refused(t):
        alerts[:] = lv.Browser.eval(browser, session, "window.__alerts") or []
        return alerts or "went wrong" in t
    refused, text = wait_text(lv, browser, session, refused)
    shown = [n for n, fr in want for n in [n] + fr if n in text]
    with open(os.path.join(OUT, "page-broken.txt"), "w") as f:
        f.write(text)
    tap.result(refused and not shown,
               "the same file cut in half is refused, none of it shown",
               [f"page text: {text[:300]!r}", f"alerts: {alerts!r}"])


def main():
    lv = live_view()
    tap = lv.Tap()
    path = sys.argv[1] if len(sys.argv) > 1 else GOLDEN
    shutil.rmtree(OUT, ignore_errors=True)
    os.makedirs(OUT)
    if not install(tap):
        print(f"1..{tap.n}")
        return 1
    chromium = os.environ.get("BFT_CHROMIUM", "chromium")
    with tempfile.TemporaryDirectory() as tmp:
        root = os.path.join(tmp, "www")
        shutil.copytree(APP, root)
        shutil.copy(path, os.path.join(root, "good.json"))
        with open(path, "rb") as f:
            data = f.read()
        with open(os.path.join(root, "broken.json"), "wb") as f:
            f.write(data[:len(data) // 2])
        srv = serve(root)
        base = f"http://127.0.0.1:{srv.server_address[1]}"
        with open(os.path.join(OUT, "chromium.log"), "w") as log:
            browser = lv.Browser(chromium, os.path.join(tmp, "profile"), log)
            try:
                if check_good(lv, tap, browser, base, path):
                    check_broken(lv, tap, browser, base, path)
            except lv.Fail as e:
                tap.result(False, f"the browser: {e}")
            finally:
                browser.close()
                srv.shutdown()
                srv.server_close()
    print(f"1..{tap.n}")
    return 1 if tap.failed else 0


if __name__ == "__main__":
    sys.exit(main())
