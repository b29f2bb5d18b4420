#!/usr/bin/python3
"""tests/browser_check.py — opens a report's index.html in headless Chromium and says what a
reader's browser would get wrong.

Usage: browser_check.py [--screenshot PNG [--scale 1]] [--widths 1280,800] [--timeout 60]
                        [--chromium CMD] REPORT   (index.html, or the folder that holds it)

Chromium runs with --remote-debugging-pipe: the DevTools protocol goes over fds 3 (to the
browser) and 4 (from it), each message JSON ended by a NUL byte, so no port is opened. Its
profile is a private temporary folder, removed at the end with the browser's own process group
(it is started in a session of its own and killed by that id). Every wait shares one deadline
(--timeout seconds in all).

A finding is one line on stdout:
  - a console error (console.error or console.assert), an uncaught exception, or a browser log
    entry of level error (a resource that failed to load among them);
  - an <img> that is not complete or has no natural width (it did not load);
  - a link to a file beside the page that is not there;
  - at each of --widths (CSS px, the viewport's width): the page wider than the viewport, or an
    element whose content is wider than its box (scrollWidth > clientWidth by more than 1 px, to
    allow for rounding), unless that element or one around it scrolls (overflow-x auto or
    scroll), as a wide table in a scroll box does. The elements that stick out are named.
With --screenshot, the page is captured whole as PNG (at the first width with a 900 px tall
viewport, content below it included, drawn at --scale), findings or not.

Standard library only. Exit 0 without findings, 1 with any, 2 when the check could not run
(bad arguments, no such file, no browser, the browser died or the deadline passed).
"""

import argparse
import base64
import fcntl
import json
import os
import select
import shlex
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import urllib.parse
import urllib.request

PROG = "browser_check"
VIEW_HEIGHT = 900


class CannotRun(Exception):
    """The check could not be made (exit 2)."""


# Run in the page at each width: a list of findings, each a one-line string. Console errors are
# collected from the protocol's events, not here.
PAGE_CHECKS_JS = r"""
(() => {
  const out = [];
  const squash = (s, n) => {
    s = (s || '').replace(/\s+/g, ' ').trim();
    return s.length > n ? s.slice(0, n - 1) + '…' : s;
  };
  // The nearest heading before el in document order, for a reader to find it.
  const headingBefore = el => {
    for (let e = el; e && e !== document.body; e = e.parentElement) {
      for (let s = e.previousElementSibling; s; s = s.previousElementSibling) {
        if (/^H[1-6]$/.test(s.tagName)) return s;
        const inner = s.querySelectorAll('h1,h2,h3,h4,h5,h6');
        if (inner.length) return inner[inner.length - 1];
      }
    }
    return null;
  };
  // tag#id.class, an image's src (or that of the one image inside), the first words (a table's
  // header row), and with `under` the heading above; the body is just "body".
  const describe = (el, under) => {
    let d = el.tagName.toLowerCase();
    if (el === document.body) return d;
    if (el.id) d += '#' + el.id;
    if (typeof el.className === 'string' && el.className.trim())
      d += '.' + el.className.trim().split(/\s+/).join('.');
    const imgs = el.tagName === 'IMG' ? [el] : el.querySelectorAll('img');
    const img = imgs.length === 1 ? imgs[0] : null;
    if (img) d += (img === el ? '' : ' > img') + ' src="' + img.getAttribute('src') + '"';
    const text = el.tagName === 'TABLE' && el.rows.length
        ? squash([...el.rows[0].cells].map(c => squash(c.textContent, 30)).join(' | '), 70)
        : squash(el.textContent, 60);
    if (text) d += ' "' + text + '"';
    const h = under ? headingBefore(el) : null;
    if (h) d += ' (under "' + squash(h.textContent, 50) + '")';
    return d;
  };
  const scrolls = el => {
    for (let e = el; e && e.nodeType === 1; e = e.parentElement) {
      const o = getComputedStyle(e).overflowX;
      if (o === 'auto' || o === 'scroll') return true;
    }
    return false;
  };
  // The children of box that reach past its right edge (its padding box, where scrolling starts).
  const stickingOut = box => {
    const r = box.getBoundingClientRect();
    const edge = r.left + box.clientLeft + box.clientWidth;
    const found = [];
    const walk = parent => {
      for (const c of parent.children) {
        const cr = c.getBoundingClientRect();
        if (cr.width === 0 && cr.height === 0 && getComputedStyle(c).display === 'contents') {
          walk(c);
        } else if (cr.right > edge + 1) {
          found.push(describe(c, false) + ' reaches ' + Math.round(cr.right - edge) + ' px past it');
        }
      }
    };
    walk(box);
    return found;
  };

  const root = document.documentElement;
  const vw = root.clientWidth;
  const pageOverflows = root.scrollWidth > vw + 1;
  if (pageOverflows) {
    const culprits = stickingOut(document.body);
    out.push('overflow: the page is ' + root.scrollWidth + ' px wide in a ' + vw +
             ' px viewport' + (culprits.length ? ': ' + culprits.join('; ') : ''));
  }
  // The body's own overflow is the page's when the page overflows: said once, above.
  for (const el of [...(pageOverflows ? [] : [document.body]),
                    ...document.body.querySelectorAll('*')]) {
    if (el.scrollWidth - el.clientWidth <= 1 || el.clientWidth === 0) continue;
    if (scrolls(el)) continue;
    const culprits = stickingOut(el);
    out.push('overflow: ' + describe(el, true) + ' holds ' + el.scrollWidth + ' px in ' +
             el.clientWidth + ' px' + (culprits.length ? ': ' + culprits.join('; ') : ''));
  }
  return out;
})()
"""

# Once, after load: every image's state, and the local files the page links to.
IMAGES_AND_LINKS_JS = r"""
(() => {
  const images = [...document.images].map(i => ({
    src: i.getAttribute('src'), url: i.currentSrc || i.src,
    complete: i.complete, naturalWidth: i.naturalWidth}));
  const links = [...document.querySelectorAll('a[href]')].map(a => ({
    href: a.getAttribute('href'), url: a.href}));
  return {images, links};
})()
"""


class Browser:
    """Chromium over the DevTools pipe: send commands, gather events, one deadline for all."""

    def __init__(self, command, deadline, workdir):
        self.deadline = deadline
        self.workdir = workdir
        self.next_id = 0
        self.buffer = b""
        self.events = []  # (sessionId, method, params) not yet looked at
        self.proc = None
        self.stderr_path = os.path.join(workdir, "chromium.stderr")
        profile = os.path.join(workdir, "profile")
        os.mkdir(profile)
        to_browser_r, to_browser_w = os.pipe()
        from_browser_r, from_browser_w = os.pipe()
        # Above 10 so that placing them on 3 and 4 in the child cannot overwrite one another.
        hi_r = fcntl.fcntl(to_browser_r, fcntl.F_DUPFD_CLOEXEC, 10)
        hi_w = fcntl.fcntl(from_browser_w, fcntl.F_DUPFD_CLOEXEC, 10)
        os.close(to_browser_r)
        os.close(from_browser_w)

        def place_pipe_fds():
            os.dup2(hi_r, 3)
            os.dup2(hi_w, 4)

        args = command + [
            "--headless", "--no-sandbox", "--remote-debugging-pipe",
            "--user-data-dir=" + profile,
            "--window-size=%d,%d" % (1280, VIEW_HEIGHT), "--hide-scrollbars",
            "--no-first-run", "--no-default-browser-check", "--disable-gpu",
            "--disable-background-networking", "--disable-component-update", "--disable-sync",
            "--disable-default-apps", "--disable-extensions", "--disable-breakpad",
            "--mute-audio", "about:blank",
        ]
        env = dict(os.environ)
        env.update(HOME=workdir, XDG_CONFIG_HOME=os.path.join(workdir, "config"),
                   XDG_CACHE_HOME=os.path.join(workdir, "cache"))
        try:
            with open(self.stderr_path, "wb") as err:
                self.proc = subprocess.Popen(
                    args, stdin=subprocess.DEVNULL, stdout=err, stderr=err, env=env,
                    pass_fds=(3, 4), preexec_fn=place_pipe_fds, start_new_session=True)
        except OSError as e:
            raise CannotRun("cannot start %s: %s" % (command[0], e.strerror))
        finally:
            os.close(hi_r)
            os.close(hi_w)
        self.write_fd = to_browser_w
        self.read_fd = from_browser_r

    def left(self):
        return self.deadline - time.monotonic()

    def stderr_tail(self):
        try:
            with open(self.stderr_path, "rb") as f:
                lines = f.read().decode("utf-8", "replace").strip().splitlines()
        except OSError:
            return ""
        return " | ".join(lines[-3:])

    def died(self, doing):
        tail = self.stderr_tail()
        return CannotRun("chromium exited (status %s) while %s%s" % (
            self.proc.poll(), doing, ": " + tail if tail else ""))

    def send(self, method, params=None, session=None):
        self.next_id += 1
        msg = {"id": self.next_id, "method": method, "params": params or {}}
        if session:
            msg["sessionId"] = session
        data = json.dumps(msg).encode() + b"\0"
        while data:
            if self.left() <= 0:
                raise CannotRun("timed out sending %s" % method)
            _, ready, _ = select.select([], [self.write_fd], [], self.left())
            if ready:
                try:
                    n = os.write(self.write_fd, data)
                except BrokenPipeError:
                    raise self.died("sending " + method)
                data = data[n:]
        return self.next_id

    def read_message(self, doing):
        """The next message, waiting at most until the deadline."""
        while b"\0" not in self.buffer:
            left = self.left()
            if left <= 0:
                raise CannotRun("timed out %s" % doing)
            ready, _, _ = select.select([self.read_fd], [], [], left)
            if not ready:
                continue
            chunk = os.read(self.read_fd, 1 << 20)
            if not chunk:
                raise self.died(doing)
            self.buffer += chunk
        raw, self.buffer = self.buffer.split(b"\0", 1)
        return json.loads(raw)

    def call(self, method, params=None, session=None):
        """Sends a command and returns its result; events met meanwhile are kept."""
        want = self.send(method, params, session)
        while True:
            msg = self.read_message("waiting for the answer to " + method)
            if msg.get("id") == want:
                if "error" in msg:
                    raise CannotRun("%s failed: %s" % (method, msg["error"].get("message")))
                return msg.get("result", {})
            if "method" in msg:
                self.events.append((msg.get("sessionId"), msg["method"], msg.get("params", {})))

    def wait_event(self, method, session):
        for i, (s, m, _) in enumerate(self.events):
            if s == session and m == method:
                return self.events.pop(i)
        while True:
            msg = self.read_message("waiting for " + method)
            if "method" in msg:
                ev = (msg.get("sessionId"), msg["method"], msg.get("params", {}))
                if ev[0] == session and ev[1] == method:
                    return ev
                self.events.append(ev)

    def close(self):
        """Asks the browser to quit (3 s of grace past the deadline), then kills its process
        group whatever it did, and reaps what was in it."""
        if self.proc is None:
            return
        if self.proc.poll() is None:
            self.deadline = max(self.deadline, time.monotonic()) + 3.0
            try:
                self.send("Browser.close")
                self.proc.wait(timeout=max(0.1, self.left()))
            except (CannotRun, OSError, subprocess.TimeoutExpired):
                pass
        # The group is the one start_new_session made for this browser: its helpers
        # (zygote, renderer, GPU process) are in it too.
        try:
            os.killpg(self.proc.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass
        try:
            self.proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            pass
        # Helpers orphaned by the browser's exit were handed to this process (a subreaper, see
        # main): wait for the ones of its group, so none is left behind, not even as a zombie.
        stop = time.monotonic() + 5.0
        while time.monotonic() < stop:
            try:
                pid, _ = os.waitpid(-self.proc.pid, os.WNOHANG)
            except ChildProcessError:
                break
            if pid == 0:
                time.sleep(0.05)
        for fd in (self.write_fd, self.read_fd):
            try:
                os.close(fd)
            except OSError:
                pass


def remote_object_text(obj):
    if "value" in obj:
        return obj["value"] if isinstance(obj["value"], str) else json.dumps(obj["value"])
    return obj.get("description") or obj.get("unserializableValue") or obj.get("type", "")


def where(params):
    url = params.get("url") or ""
    if not url:
        frames = (params.get("stackTrace") or {}).get("callFrames") or []
        if frames:
            url = frames[0].get("url", "")
            if "lineNumber" in frames[0]:
                return "%s:%d" % (os.path.basename(url) or url, frames[0]["lineNumber"] + 1)
    if not url:
        return ""
    line = params.get("lineNumber")
    return os.path.basename(urllib.parse.urlparse(url).path) + (":%d" % (line + 1) if line is not None else "")


def event_findings(events, session):
    """Console errors, uncaught exceptions and error log entries, one line each, no repeats."""
    found = []
    for s, method, p in events:
        if s != session:
            continue
        if method == "Runtime.consoleAPICalled" and p.get("type") in ("error", "assert"):
            text = " ".join(remote_object_text(a) for a in p.get("args", []))
            at = where(p)
            found.append("console %s: %s%s" % (p["type"], text, " (" + at + ")" if at else ""))
        elif method == "Runtime.exceptionThrown":
            d = p.get("exceptionDetails", {})
            text = (d.get("exception") or {}).get("description") or d.get("text", "")
            text = text.splitlines()[0] if text else "(no description)"
            at = where({"url": d.get("url"), "lineNumber": d.get("lineNumber"),
                        "stackTrace": d.get("stackTrace")})
            found.append("uncaught exception: %s%s" % (text, " (" + at + ")" if at else ""))
        elif method == "Log.entryAdded":
            e = p.get("entry", {})
            if e.get("level") == "error":
                at = e.get("url", "")
                found.append("browser log (%s): %s%s" % (
                    e.get("source", "?"), e.get("text", ""), " " + at if at else ""))
    unique = []
    for f in found:
        if f not in unique:
            unique.append(f)
    return unique


def evaluate(browser, session, expression):
    r = browser.call("Runtime.evaluate", {"expression": expression, "returnByValue": True,
                                          "awaitPromise": True}, session)
    if "exceptionDetails" in r:
        d = r["exceptionDetails"]
        raise CannotRun("the check's own script failed: %s" % (
            (d.get("exception") or {}).get("description") or d.get("text")))
    return r.get("result", {}).get("value")


def set_width(browser, session, width):
    browser.call("Emulation.setDeviceMetricsOverride",
                 {"width": width, "height": VIEW_HEIGHT, "deviceScaleFactor": 1, "mobile": False},
                 session)
    # Let layout settle at the new width before measuring.
    evaluate(browser, session,
             "new Promise(r => requestAnimationFrame(() => requestAnimationFrame(() => r(true))))")


def check(page, widths, screenshot, scale, deadline, command):
    """Returns the findings for the page; raises CannotRun."""
    workdir = tempfile.mkdtemp(prefix="tpb-browser-check-")
    browser = None
    try:
        browser = Browser(command, deadline, workdir)
        target = browser.call("Target.createTarget", {"url": "about:blank"})["targetId"]
        session = browser.call("Target.attachToTarget",
                               {"targetId": target, "flatten": True})["sessionId"]
        for domain in ("Runtime", "Log", "Page"):
            browser.call(domain + ".enable", {}, session)
        set_width(browser, session, widths[0])
        url = "file://" + urllib.request.pathname2url(page)
        nav = browser.call("Page.navigate", {"url": url}, session)
        if nav.get("errorText"):
            raise CannotRun("cannot open %s: %s" % (page, nav["errorText"]))
        browser.wait_event("Page.loadEventFired", session)
        # Fonts in, two frames drawn: what loads with the page has loaded (or failed) by now.
        evaluate(browser, session, "document.fonts.ready.then(() => new Promise(r => "
                                   "requestAnimationFrame(() => requestAnimationFrame(() => r(true)))))")

        findings = []
        state = evaluate(browser, session, IMAGES_AND_LINKS_JS)
        for img in state["images"]:
            if not img["complete"] or img["naturalWidth"] == 0:
                findings.append("image did not load: %s" % img["src"])
        for link in state["links"]:
            u = urllib.parse.urlparse(link["url"])
            if u.scheme != "file" or link["href"].startswith("#"):
                continue
            target_path = urllib.request.url2pathname(u.path)
            if not os.path.exists(target_path):
                findings.append("broken link: %s (no such file)" % link["href"])
        for w in widths:
            set_width(browser, session, w)
            for f in evaluate(browser, session, PAGE_CHECKS_JS):
                findings.append("at %d px: %s" % (w, f))

        if screenshot:
            set_width(browser, session, widths[0])
            metrics = browser.call("Page.getLayoutMetrics", {}, session)
            size = metrics.get("cssContentSize") or metrics["contentSize"]
            shot = browser.call("Page.captureScreenshot", {
                "format": "png", "captureBeyondViewport": True,
                "clip": {"x": 0, "y": 0, "width": widths[0],
                         "height": max(VIEW_HEIGHT, int(size["height"] + 0.999)),
                         "scale": scale}},
                session)
            data = base64.b64decode(shot["data"])
            tmp = screenshot + ".tmp%d" % os.getpid()
            try:
                with open(tmp, "wb") as f:
                    f.write(data)
                os.replace(tmp, screenshot)
            except OSError as e:
                try:
                    os.unlink(tmp)
                except OSError:
                    pass
                raise CannotRun("cannot write %s: %s" % (screenshot, e.strerror))

        # Last, so that messages logged during the checks are in too.
        evaluate(browser, session, "true")
        return event_findings(browser.events, session) + findings
    finally:
        if browser is not None:
            browser.close()
        shutil.rmtree(workdir, ignore_errors=True)


def main():
    ap = argparse.ArgumentParser(prog=PROG, description=__doc__.split("\n\n")[0])
    ap.add_argument("report", help="the report's index.html, or its folder")
    ap.add_argument("--screenshot", metavar="PNG", help="write a full-page screenshot here")
    ap.add_argument("--scale", type=float, default=1.0,
                    help="the screenshot's scale, 0.25 to 1 (default 1: one pixel per CSS px)")
    ap.add_argument("--widths", default="1280,800",
                    help="viewport widths in CSS px to check at (default 1280,800)")
    ap.add_argument("--timeout", type=float, default=60.0,
                    help="seconds for the whole check, browser start included (default 60)")
    ap.add_argument("--chromium", default=os.environ.get("TPB_CHROMIUM", "chromium"),
                    help="browser command (default $TPB_CHROMIUM or chromium)")
    a = ap.parse_args()

    def fail(msg):
        print("%s: %s" % (PROG, msg), file=sys.stderr)
        return 2

    try:
        widths = [int(w) for w in a.widths.split(",")]
        if not widths or min(widths) < 200 or max(widths) > 10000:
            raise ValueError
    except ValueError:
        return fail("--widths: expected widths of 200 to 10000 px, comma separated, got '%s'" % a.widths)
    if not 0.25 <= a.scale <= 1:
        return fail("--scale: expected 0.25 to 1, got %s" % a.scale)
    if not a.timeout > 0:
        return fail("--timeout: expected seconds > 0, got %s" % a.timeout)
    page = os.path.abspath(a.report)
    if os.path.isdir(page):
        page = os.path.join(page, "index.html")
    if not os.path.isfile(page):
        return fail("no such file: %s" % page)
    if not page.endswith((".html", ".htm")):
        return fail("not an HTML page: %s" % page)
    if a.screenshot:
        a.screenshot = os.path.abspath(a.screenshot)
        if not os.path.isdir(os.path.dirname(a.screenshot)):
            return fail("--screenshot: no such folder: %s" % os.path.dirname(a.screenshot))
    command = shlex.split(a.chromium)
    if not command or not shutil.which(command[0]):
        return fail("browser not found: %s" % (command[0] if command else "(empty)"))

    # The browser's helpers outlive it by a moment when it is killed: made this process's
    # children (Linux's PR_SET_CHILD_SUBREAPER), they are reaped by close(). Best effort.
    try:
        import ctypes
        ctypes.CDLL(None, use_errno=True).prctl(36, 1, 0, 0, 0)  # PR_SET_CHILD_SUBREAPER
    except (OSError, AttributeError):
        pass
    # SIGTERM (ctest's timeout, a kill) unwinds like an error, so the browser is still closed.
    def on_term(signum, _frame):
        raise CannotRun("stopped by signal %d" % signum)

    signal.signal(signal.SIGTERM, on_term)
    signal.signal(signal.SIGINT, on_term)
    started = time.monotonic()
    try:
        findings = check(page, widths, a.screenshot, a.scale, started + a.timeout, command)
    except CannotRun as e:
        return fail(str(e))
    for f in findings:
        print(f)
    took = time.monotonic() - started
    shown = os.path.relpath(page)
    if shown.startswith(".."):
        shown = page
    if findings:
        print("%s: %s: %d finding(s) (%.1f s)" % (PROG, shown, len(findings), took))
        return 1
    print("%s: %s: every image loads, nothing overflows at %s px, no console error (%.1f s)%s" % (
        PROG, shown, ", ".join(map(str, widths)), took,
        "; screenshot " + a.screenshot if a.screenshot else ""))
    return 0


if __name__ == "__main__":
    sys.exit(main())
