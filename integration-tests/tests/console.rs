//! `kroupier console` in a real browser: headless Chromium (Debian's package, installed by
//! `scripts/browser`) loads the page of a group of three `quickstart` workers, one worker is
//! SIGKILLed, and the page — updated over Server-Sent Events, never reloaded — must show the
//! killed worker's tasks under the survivors, the failover and the rebalance. A click on a
//! survivor's status link must open its `/status` (fetched through the console). A screenshot
//! is saved in the test's temp dir and its path printed, with `MEASURE` lines: the page's size
//! and the update latency (from the kill to the page showing every move).
//!
//! The browser is driven over the DevTools protocol (a WebSocket client of a few lines here).
//! Runs against `KROUPIER_KAFKA_BOOTSTRAP` when set, else a `kroupier coordinator` it starts.
//! Without Chromium it prints why and skips, unless `CI=true` (then it fails).

use std::collections::{BTreeMap, BTreeSet};
use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use kroupier_integration_tests::cli::{console, line_after};
use kroupier_integration_tests::process::{Process, Signal};
use kroupier_integration_tests::quickstart::{Group, TempDir, poll, wait_balanced};
use kroupier_integration_tests::{BOOTSTRAP_ENV, kafka_required};
use serde_json::{Value, json};

const TASKS: usize = 12;
/// How soon the page must show the moves after the kill (fast failover makes it about a
/// second; this leaves room for a loaded machine and a session timeout of 3 s).
const UPDATE_BOUND: Duration = Duration::from_secs(15);

/// The Chromium binary, or `None` when there is none (and none is required).
fn chromium() -> Option<PathBuf> {
    if let Some(path) = std::env::var_os("KROUPIER_CHROMIUM").filter(|p| !p.is_empty()) {
        return Some(PathBuf::from(path));
    }
    for name in ["chromium", "chromium-browser", "google-chrome"] {
        let found = Command::new("sh")
            .args(["-c", &format!("command -v {name}")])
            .output()
            .ok()
            .filter(|o| o.status.success())
            .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_owned());
        if let Some(path) = found.filter(|p| !p.is_empty()) {
            return Some(PathBuf::from(path));
        }
    }
    assert!(
        !kafka_required(),
        "console: Chromium is required in CI (scripts/browser installs it) but none is installed"
    );
    eprintln!("SKIP console: no Chromium installed (run scripts/browser)");
    None
}

/// The flags every Chromium run here needs: headless, and no sandbox (CI runs as root).
fn headless(chromium: &Path, profile: &Path) -> Command {
    let mut command = Command::new(chromium);
    command.args([
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--no-first-run",
        "--window-size=1400,900",
    ]);
    command.arg(format!("--user-data-dir={}", profile.display()));
    command
}

/// A child killed when dropped.
struct Guard(Child);

impl Drop for Guard {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// A DevTools WebSocket connection (text frames only; client frames masked, RFC 6455).
struct DevTools {
    stream: TcpStream,
    next_id: u64,
}

impl DevTools {
    /// Connects to a `ws://host:port/path` DevTools URL.
    fn connect(url: &str) -> Self {
        let rest = url.strip_prefix("ws://").expect("a ws:// URL");
        let (host, path) = rest.split_at(rest.find('/').expect("a path"));
        let mut stream = TcpStream::connect(host).expect("connect to DevTools");
        stream
            .set_read_timeout(Some(Duration::from_secs(20)))
            .expect("read timeout");
        write!(
            stream,
            "GET {path} HTTP/1.1\r\nHost: {host}\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\
             Sec-WebSocket-Key: a3JvdXBpZXJjb25zb2xlIQ==\r\nSec-WebSocket-Version: 13\r\n\r\n"
        )
        .expect("send the handshake");
        let mut head = Vec::new();
        let mut byte = [0u8; 1];
        while !head.ends_with(b"\r\n\r\n") {
            stream.read_exact(&mut byte).expect("read the handshake");
            head.push(byte[0]);
        }
        let head = String::from_utf8_lossy(&head);
        assert!(head.starts_with("HTTP/1.1 101"), "no WebSocket: {head}");
        DevTools { stream, next_id: 0 }
    }

    fn send(&mut self, text: &str) {
        let payload = text.as_bytes();
        let mut frame = vec![0x81u8];
        match payload.len() {
            n if n < 126 => frame.push(0x80 | n as u8),
            n if n <= 0xFFFF => {
                frame.push(0x80 | 126);
                frame.extend_from_slice(&(n as u16).to_be_bytes());
            }
            n => {
                frame.push(0x80 | 127);
                frame.extend_from_slice(&(n as u64).to_be_bytes());
            }
        }
        let mask = [0x6b, 0x72, 0x6f, 0x75];
        frame.extend_from_slice(&mask);
        frame.extend(payload.iter().enumerate().map(|(i, b)| b ^ mask[i % 4]));
        self.stream.write_all(&frame).expect("send a frame");
    }

    /// The next whole message (continuation frames joined; control frames skipped).
    fn receive(&mut self) -> String {
        let mut message = Vec::new();
        loop {
            let mut head = [0u8; 2];
            self.stream.read_exact(&mut head).expect("read a frame");
            let len = match head[1] & 0x7F {
                126 => {
                    let mut n = [0u8; 2];
                    self.stream.read_exact(&mut n).expect("read a length");
                    u64::from(u16::from_be_bytes(n))
                }
                127 => {
                    let mut n = [0u8; 8];
                    self.stream.read_exact(&mut n).expect("read a length");
                    u64::from_be_bytes(n)
                }
                n => u64::from(n),
            };
            let mut payload = vec![0u8; usize::try_from(len).expect("a frame that fits")];
            self.stream
                .read_exact(&mut payload)
                .expect("read a payload");
            let opcode = head[0] & 0x0F;
            if opcode >= 0x8 {
                continue;
            }
            message.extend_from_slice(&payload);
            if head[0] & 0x80 != 0 {
                return String::from_utf8(message).expect("UTF-8 text");
            }
        }
    }

    /// Calls `method` (in `session`, if any) and returns its result.
    fn call(&mut self, session: Option<&str>, method: &str, params: Value) -> Value {
        self.next_id += 1;
        let id = self.next_id;
        let mut request = json!({"id": id, "method": method, "params": params});
        if let Some(session) = session {
            request["sessionId"] = json!(session);
        }
        self.send(&request.to_string());
        loop {
            let answer: Value = serde_json::from_str(&self.receive()).expect("JSON from DevTools");
            if answer["id"] == json!(id) {
                assert!(answer["error"].is_null(), "{method}: {answer}");
                return answer["result"].clone();
            }
        }
    }
}

/// A page open in headless Chromium.
struct Page {
    devtools: DevTools,
    session: String,
}

impl Page {
    fn open(devtools: DevTools, url: &str) -> Self {
        let mut devtools = devtools;
        let target = devtools.call(None, "Target.createTarget", json!({"url": url}));
        let attached = devtools.call(
            None,
            "Target.attachToTarget",
            json!({"targetId": target["targetId"], "flatten": true}),
        );
        let session = attached["sessionId"]
            .as_str()
            .expect("a session")
            .to_owned();
        Page { devtools, session }
    }

    /// Evaluates `expression` in the page; its value (JSON).
    fn eval(&mut self, expression: &str) -> Value {
        let result = self.devtools.call(
            Some(&self.session),
            "Runtime.evaluate",
            json!({"expression": expression, "returnByValue": true}),
        );
        result["result"]["value"].clone()
    }

    /// Each worker column's tasks, as the DOM shows them.
    fn columns(&mut self) -> BTreeMap<String, BTreeSet<String>> {
        let value = self.eval(
            "JSON.stringify([...document.querySelectorAll('.worker[data-worker]:not(.unplaced)')]\
             .map(c => [c.dataset.worker, [...c.querySelectorAll('[data-task]')]\
             .map(t => t.dataset.task)]))",
        );
        let pairs: Vec<(String, Vec<String>)> =
            serde_json::from_str(value.as_str().unwrap_or("[]")).expect("columns as JSON");
        pairs
            .into_iter()
            .map(|(worker, tasks)| (worker, tasks.into_iter().collect()))
            .collect()
    }
}

/// The broker of `KROUPIER_KAFKA_BOOTSTRAP`, else a `kroupier coordinator` started here (kept
/// running while the returned process lives).
fn broker() -> (String, Option<Process>) {
    match std::env::var(BOOTSTRAP_ENV) {
        Ok(addr) if !addr.trim().is_empty() => (addr.trim().to_owned(), None),
        _ => {
            let mut process = Process::spawn(
                "kroupier",
                &["coordinator", "--listen", "127.0.0.1:0"].map(String::from),
            );
            let addr = line_after(&mut process, "bootstrap=");
            (addr, Some(process))
        }
    }
}

/// Headless Chromium (its profile in `dir`) with `url` open; the browser stops when the guard
/// is dropped.
fn browse(chromium: &Path, dir: &Path, url: &str) -> (Guard, Page) {
    let mut browser = headless(chromium, &dir.join("profile"));
    let mut browser = browser
        .args(["--remote-debugging-port=0", "about:blank"])
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start Chromium");
    let stderr = browser.stderr.take().expect("Chromium's stderr");
    let browser = Guard(browser);
    let devtools_url = BufReader::new(stderr)
        .lines()
        .map_while(Result::ok)
        .find_map(|line| {
            line.strip_prefix("DevTools listening on ")
                .map(|u| u.trim().to_owned())
        })
        .expect("Chromium prints its DevTools URL");
    let page = Page::open(DevTools::connect(&devtools_url), url);
    (browser, page)
}

#[test]
fn the_page_shows_a_killed_workers_tasks_move_to_the_survivors() {
    let Some(chromium) = chromium() else {
        return;
    };
    let dir = TempDir::new("console");
    let (bootstrap, coordinator) = broker();
    let journal = dir.0.join("journals");
    std::fs::create_dir_all(&journal).expect("journal dir");
    let group = Group::new(&bootstrap, "console", TASKS, &journal);
    let workers: Vec<_> = (1..=3).map(|n| group.start(&format!("w{n}"))).collect();
    wait_balanced(&journal, TASKS, 3);

    let (console, url) = console(&bootstrap, &group.group);

    let (browser, mut page) = browse(&chromium, &dir.0, &url);

    let before = poll(Duration::from_secs(20), || {
        let columns = page.columns();
        let total: usize = columns.values().map(BTreeSet::len).sum();
        (columns.len() == 3 && total == TASKS).then_some(columns)
    })
    .expect("the page shows 3 workers sharing every task");
    let (victim, moved) = before
        .iter()
        .max_by_key(|(name, tasks)| (tasks.len(), std::cmp::Reverse((*name).clone())))
        .map(|(name, tasks)| (name.clone(), tasks.clone()))
        .expect("a worker");
    assert!(!moved.is_empty(), "{victim} has tasks to move");

    let index = workers.iter().position(|w| w.id == victim).expect("victim");
    let killed = Instant::now();
    workers[index].process.signal(Signal::Kill);
    let after = poll(UPDATE_BOUND, || {
        let columns = page.columns();
        let survivors: BTreeSet<&String> = columns.values().flatten().collect();
        (!columns.contains_key(&victim) && moved.iter().all(|t| survivors.contains(t)))
            .then_some(columns)
    })
    .unwrap_or_else(|| {
        panic!(
            "within {UPDATE_BOUND:?} of the kill the page must show {victim}'s tasks \
             {moved:?} under the survivors; it shows {:?}",
            page.columns()
        )
    });
    let latency = killed.elapsed();
    assert_eq!(after.len(), 2, "{after:?}");
    assert_eq!(after.values().map(BTreeSet::len).sum::<usize>(), TASKS);
    for (worker, tasks) in &after {
        for task in tasks {
            if let Some(was) = before.get(worker)
                && !was.contains(task)
            {
                assert!(
                    moved.contains(task),
                    "{task} came to {worker} from a survivor"
                );
            }
        }
    }
    // The failover and the rebalance are on the page too.
    let failover = poll(Duration::from_secs(10), || {
        let text = page.eval(&format!(
            "document.querySelector('[data-failover=\"{victim}\"]')?.textContent ?? ''"
        ));
        let text = text.as_str().unwrap_or_default().to_owned();
        text.contains("new owners").then_some(text)
    })
    .expect("the page shows the failover time");
    let timeline = page.eval("document.getElementById('timeline').textContent");
    let timeline = timeline.as_str().unwrap_or_default();
    assert!(timeline.contains(&format!("left: {victim}")), "{timeline}");
    for task in &moved {
        assert!(
            timeline.contains(&format!("{task}: {victim} →")),
            "{timeline}"
        );
    }
    let live = page.eval("document.getElementById('live').textContent");
    assert!(
        live.as_str().unwrap_or_default().starts_with("live"),
        "{live}"
    );

    // A survivor's status, one click away.
    let survivor = after.keys().next().expect("a survivor").clone();
    page.eval(&format!(
        "document.querySelector('[data-panel=\"{survivor}\"]').click()"
    ));
    let panel = poll(Duration::from_secs(10), || {
        let rows = page.eval("document.querySelectorAll('#panel-body tr').length");
        (rows.as_u64() == Some(after[&survivor].len() as u64 + 1)).then_some(rows)
    });
    assert!(panel.is_some(), "the panel lists {survivor}'s tasks");
    // The one action: restart a task, through the console, on the worker that holds it.
    let task = after[&survivor].first().expect("a task").clone();
    page.eval(&format!(
        "document.querySelector('[data-restart=\"{task}\"]').click()"
    ));
    let answer = poll(Duration::from_secs(10), || {
        let text = page.eval("document.getElementById('panel-message')?.textContent ?? ''");
        let text = text.as_str().unwrap_or_default().to_owned();
        (!text.is_empty()).then_some(text)
    })
    .expect("the page shows the worker's answer to the restart");
    assert!(
        answer.starts_with(&format!("restart {task}: 202")),
        "{answer}"
    );

    let screenshot = dir.0.join("console.png");
    let shot = headless(&chromium, &dir.0.join("profile-shot"))
        .arg(format!("--screenshot={}", screenshot.display()))
        .arg(&url)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .expect("run Chromium for the screenshot");
    assert!(shot.success() && screenshot.exists(), "no screenshot");
    // Kept beside the temp dir (which is removed): copy it out for a look.
    let kept = std::env::temp_dir().join(format!("kroupier-console-{}.png", std::process::id()));
    std::fs::copy(&screenshot, &kept).expect("keep the screenshot");
    println!("screenshot: {}", kept.display());
    println!("failover on the page: {failover}");
    println!(
        "MEASURE console_update_ms={} (SIGKILL of {victim} to the page showing its {} tasks \
         under the survivors)",
        latency.as_millis(),
        moved.len()
    );
    let page_bytes = ["index.html", "console.js", "console.css"]
        .iter()
        .map(|asset| {
            let path = Path::new(env!("CARGO_MANIFEST_DIR"))
                .join("../crates/cli/assets/console")
                .join(asset);
            std::fs::metadata(path).map_or(0, |m| m.len())
        })
        .sum::<u64>();
    println!("MEASURE console_assets_bytes={page_bytes}");
    drop(browser);
    drop(console);
    drop(workers);
    drop(coordinator);
}

/// The text the page shows for the last action, once there is one (within 30 s: on a loaded
/// machine the write, the store's read-back and the page's next poll took over 10 s once).
fn message(page: &mut Page) -> String {
    poll(Duration::from_secs(30), || {
        let text = page.eval("document.getElementById('panel-message')?.textContent ?? ''");
        let text = text.as_str().unwrap_or_default().to_owned();
        (!text.is_empty()).then_some(text)
    })
    .expect("the page shows the answer to its action")
}

/// Fills the page's task form and submits it.
fn submit_task(page: &mut Page, id: &str, kind: &str, config: &str) {
    page.eval("document.getElementById('add-task').click()");
    let form = json!({"id": id, "kind": kind, "config": config});
    page.eval(&format!(
        "(() => {{ const v = {form}; const f = document.getElementById('task-form').elements; \
         f.id.value = v.id; f.kind.value = v.kind; f.config.value = v.config; \
         document.getElementById('panel-message').textContent = ''; \
         document.querySelector('#task-form button[type=submit]').click(); }})()"
    ));
}

#[test]
fn the_page_adds_pauses_resumes_and_deletes_a_stored_task() {
    let Some(chromium) = chromium() else {
        return;
    };
    let dir = TempDir::new("console-tasks");
    let (bootstrap, coordinator) = broker();
    let properties = dir.0.join("worker.properties");
    std::fs::write(&properties, "tasks.store.enabled=true\n").expect("write the properties");
    let journal = dir.0.join("journals");
    std::fs::create_dir_all(&journal).expect("journal dir");
    let mut group = Group::new(&bootstrap, "console-tasks", 0, &journal);
    group.extra = vec!["--command-config".into(), properties.display().to_string()];
    let workers: Vec<_> = (1..=2).map(|n| group.start(&format!("w{n}"))).collect();
    let (console, url) = console(&bootstrap, &group.group);
    let (browser, mut page) = browse(&chromium, &dir.0, &url);
    poll(Duration::from_secs(30), || {
        (page.columns().len() == 2).then_some(())
    })
    .expect("the page shows both workers");

    // A config that is not JSON is refused by the page; nothing is sent.
    submit_task(&mut page, "web-1", "beat", "{every_ms:");
    let answer = message(&mut page);
    assert!(answer.contains("not valid JSON"), "{answer}");

    // Added from the page: it runs on exactly one worker.
    let added = Instant::now();
    submit_task(&mut page, "web-1", "beat", r#"{"every_ms":100}"#);
    let answer = message(&mut page);
    assert!(answer.starts_with("put web-1: 200"), "{answer}");
    let owner = poll(Duration::from_secs(15), || {
        page.columns()
            .into_iter()
            .find(|(_, tasks)| tasks.contains("web-1"))
            .map(|(worker, _)| worker)
    })
    .expect("the added task shows under a worker");
    let shown_ms = added.elapsed().as_millis();
    let state_of = |page: &mut Page| {
        let text = page.eval(
            "[...document.querySelectorAll('#panel-body tr')].find(r => \
             r.firstChild?.textContent === 'web-1')?.children[1]?.textContent ?? ''",
        );
        text.as_str().unwrap_or_default().to_owned()
    };
    // Paused from the owner's panel; then resumed; then deleted.
    for (action, state) in [("pause", "PAUSED"), ("resume", "RUNNING")] {
        page.eval(&format!(
            "document.querySelector('[data-panel=\"{owner}\"]').click()"
        ));
        poll(Duration::from_secs(15), || {
            let clicked = page.eval(&format!(
                "(b => b ? (b.click(), 'clicked') : 'absent')\
                 (document.querySelector('[data-act=\"{action}\"][data-task=\"web-1\"]'))"
            ));
            (clicked.as_str() == Some("clicked")).then_some(())
        })
        .unwrap_or_else(|| panic!("the panel offers {action} for web-1"));
        let answer = message(&mut page);
        assert!(
            answer.starts_with(&format!("{action} web-1: 200")),
            "{answer}"
        );
        poll(Duration::from_secs(15), || {
            page.eval(&format!(
                "document.querySelector('[data-panel=\"{owner}\"]').click()"
            ));
            std::thread::sleep(Duration::from_millis(200));
            (state_of(&mut page) == state).then_some(())
        })
        .unwrap_or_else(|| panic!("after {action}, web-1 is {state} on {owner}"));
    }
    page.eval("document.querySelector('[data-act=\"delete\"][data-task=\"web-1\"]').click()");
    let answer = message(&mut page);
    assert!(answer.starts_with("delete web-1: 200"), "{answer}");
    poll(Duration::from_secs(15), || {
        (!page.columns().values().any(|tasks| tasks.contains("web-1"))).then_some(())
    })
    .expect("the deleted task leaves the page");
    // A task of a kind no worker registers: unplaced, with the leader's reason.
    submit_task(&mut page, "orphan", "no-such-kind", "{}");
    let answer = message(&mut page);
    assert!(answer.starts_with("put orphan: 200"), "{answer}");
    let tip = poll(Duration::from_secs(15), || {
        let tip =
            page.eval("document.querySelector('.unplaced [data-task=\"orphan\"]')?.title ?? ''");
        let tip = tip.as_str().unwrap_or_default().to_owned();
        (!tip.is_empty()).then_some(tip)
    })
    .expect("the orphan task shows as unplaced");
    assert!(tip.contains("no worker registers its kind"), "{tip}");
    println!("MEASURE console_put_to_shown_ms={shown_ms}");
    drop(browser);
    drop(console);
    drop(workers);
    drop(coordinator);
}

/// `method path` on `addr`: status code and body (HTTP/1.0, so the answer ends the connection;
/// `limit` bytes at most, for the never-ending event stream).
fn http(addr: &str, method: &str, path: &str, headers: &str, limit: u64) -> (u16, String) {
    let mut stream = TcpStream::connect(addr).expect("connect to the console");
    stream
        .set_read_timeout(Some(Duration::from_secs(10)))
        .expect("read timeout");
    write!(
        stream,
        "{method} {path} HTTP/1.0\r\nHost: {addr}\r\n{headers}Content-Length: 0\r\n\r\n"
    )
    .expect("send the request");
    let mut raw = Vec::new();
    let _ = stream.take(limit).read_to_end(&mut raw);
    let raw = String::from_utf8_lossy(&raw).into_owned();
    let (head, body) = raw.split_once("\r\n\r\n").unwrap_or((&raw, ""));
    let code = head
        .split_whitespace()
        .nth(1)
        .and_then(|c| c.parse().ok())
        .unwrap_or_else(|| panic!("not HTTP: {raw}"));
    (code, body.to_owned())
}

#[test]
fn without_a_cluster_the_console_serves_the_page_and_says_why_it_is_empty() {
    let (console, url) = console("127.0.0.1:1", "nobody");
    let addr = url
        .trim_start_matches("http://")
        .trim_end_matches('/')
        .to_owned();
    let (code, page) = http(&addr, "GET", "/", "", 1 << 20);
    assert_eq!(code, 200);
    assert!(page.contains("<title>kroupier console</title>"), "{page}");
    assert!(
        page.contains(r#""group":"nobody""#),
        "the snapshot is inline: {page}"
    );
    for asset in ["/console.js", "/console.css"] {
        assert_eq!(http(&addr, "GET", asset, "", 1 << 20).0, 200, "{asset}");
    }
    let error = poll(Duration::from_secs(15), || {
        let (_, body) = http(&addr, "GET", "/api/snapshot", "", 1 << 20);
        let snapshot: Value = serde_json::from_str(&body).expect("a JSON snapshot");
        snapshot["error"].as_str().map(str::to_owned)
    })
    .expect("the snapshot says why the group is not shown");
    assert!(error.contains("127.0.0.1:1"), "{error}");
    let (code, events) = http(&addr, "GET", "/events", "", 200);
    assert_eq!(code, 200);
    assert!(events.starts_with("event: snapshot\ndata: {"), "{events}");
    let restart = "/api/workers/w1/tasks/task-0/restart";
    assert_eq!(
        http(&addr, "POST", restart, "", 1 << 20).0,
        403,
        "no console header"
    );
    let (code, body) = http(&addr, "POST", restart, "X-Kroupier-Console: 1\r\n", 1 << 20);
    assert_eq!(code, 404, "an unknown worker: {body}");
    assert_eq!(
        http(&addr, "GET", "/api/workers/w1/status", "", 1 << 20).0,
        404
    );
    drop(console);
}

/// Runs `kroupier tasks ARGS... --bootstrap B --group G --json`; its JSON.
fn tasks_json(bootstrap: &str, group: &str, args: &[&str]) -> Value {
    let output = Command::new(kroupier_integration_tests::process::binary("kroupier"))
        .arg("tasks")
        .args(args)
        .args(["--bootstrap", bootstrap, "--group", group, "--json"])
        .output()
        .expect("run kroupier tasks");
    assert!(
        output.status.success(),
        "kroupier tasks {args:?}: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    serde_json::from_slice(&output.stdout).expect("JSON")
}

#[test]
fn console_task_writes_need_its_header_and_pass_the_workers_token_on() {
    let dir = TempDir::new("console-token");
    let (bootstrap, coordinator) = broker();
    let properties = dir.0.join("worker.properties");
    std::fs::write(
        &properties,
        "tasks.store.enabled=true\nkroupier.status.token=console-secret\n",
    )
    .expect("write the properties");
    let journal = dir.0.join("journals");
    std::fs::create_dir_all(&journal).expect("journal dir");
    let mut group = Group::new(&bootstrap, "console-token", 0, &journal);
    group.extra = vec!["--command-config".into(), properties.display().to_string()];
    let name = group.group.clone();
    tasks_json(
        &bootstrap,
        &name,
        &[
            "put",
            "t",
            "--kind",
            "beat",
            "--config",
            r#"{"every_ms":100}"#,
        ],
    );
    let worker = group.start("w1");
    let (console, url) = console(&bootstrap, &name);
    let addr = url
        .trim_start_matches("http://")
        .trim_end_matches('/')
        .to_owned();
    let console_header = "X-Kroupier-Console: 1\r\n";
    let with_token = "X-Kroupier-Console: 1\r\nAuthorization: Bearer console-secret\r\n";

    // Without the console's header: refused by the console itself.
    let (code, _) = http(&addr, "POST", "/api/tasks/t/pause", "", 1 << 16);
    assert_eq!(code, 403);
    // Once the console knows the worker's status API: without the token the worker answers 401.
    let (code, body) = poll(Duration::from_secs(20), || {
        let answer = http(&addr, "POST", "/api/tasks/t/pause", console_header, 1 << 16);
        (answer.0 != 503).then_some(answer)
    })
    .expect("the console learns the worker's status API");
    assert_eq!(code, 401, "{body}");
    assert_eq!(
        tasks_json(&bootstrap, &name, &["list"])["tasks"][0]["desired"],
        "running"
    );
    // With it, the write reaches the store.
    let (code, body) = http(&addr, "POST", "/api/tasks/t/pause", with_token, 1 << 16);
    assert_eq!(code, 200, "{body}");
    assert_eq!(
        tasks_json(&bootstrap, &name, &["list"])["tasks"][0]["desired"],
        "paused"
    );
    let (code, _) = http(&addr, "POST", "/api/tasks/t/explode", with_token, 1 << 16);
    assert_eq!(code, 404);
    let (code, body) = http(&addr, "DELETE", "/api/tasks/t", with_token, 1 << 16);
    assert_eq!(code, 200, "{body}");
    let (code, body) = http(&addr, "DELETE", "/api/tasks/t", with_token, 1 << 16);
    assert_eq!(code, 404, "a missing task: {body}");
    drop(console);
    drop(worker);
    drop(coordinator);
}

#[test]
fn fifty_workers_and_five_thousand_tasks_stay_readable() {
    let Some(chromium) = chromium() else {
        return;
    };
    let dir = TempDir::new("console-large");
    let (console, url) = console("127.0.0.1:1", "large");
    let (browser, mut page) = browse(&chromium, &dir.0, &url);
    poll(Duration::from_secs(10), || {
        (page
            .eval("typeof draw === 'function' && typeof events === 'object'")
            .as_bool()
            == Some(true))
        .then_some(())
    })
    .expect("the page's script loaded");
    // The page draws whatever snapshot it holds: stop the live events and give it a synthetic
    // group of 50 workers with 100 tasks each (two of them FAILED), in the model's shape.
    let drawn_ms = page.eval(
        "(() => { events.close(); \
           const workers = []; \
           for (let w = 0; w < 50; w++) { \
             const tasks = []; \
             for (let t = 0; t < 100; t++) { \
               const id = `task-${String(w * 100 + t).padStart(5, '0')}`; \
               tasks.push({ id, state: t < 2 ? 'FAILED' : 'RUNNING', restarts: t < 2 ? 3 : 0, \
                            last_error: t < 2 ? 'boom' : null, leaving: false }); \
             } \
             workers.push({ name: `w${String(w).padStart(2, '0')}`, member_id: `m${w}`, \
               host: '/127.0.0.1', status_addr: null, leader: w === 0, probe: 'none', \
               rebalancing: false, tasks }); \
           } \
           view.snapshot = Object.assign({}, view.snapshot, { state: 'Stable', generation: 7, \
             workers, unplaced: [], owned: 5000 }); \
           const t0 = performance.now(); draw(); return performance.now() - t0; })()",
    );
    let cards = |page: &mut Page| {
        page.eval("document.querySelectorAll('.worker[data-worker]:not(.hidden)').length")
            .as_u64()
    };
    let chips = |page: &mut Page| {
        page.eval("document.querySelectorAll('.worker [data-task]').length")
            .as_u64()
    };
    assert_eq!(cards(&mut page), Some(50));
    // Cards over 60 tasks start collapsed to counts per state, failures first.
    assert_eq!(
        chips(&mut page),
        Some(0),
        "collapsed cards show counts, not chips"
    );
    let counts = page.eval("document.querySelector('[data-worker=\"w07\"] .counts').textContent");
    assert!(
        counts
            .as_str()
            .unwrap_or_default()
            .starts_with("2 failed, 98 running"),
        "{counts}"
    );
    // The search keeps only the matching task and its worker.
    page.eval(
        "(() => { const s = document.getElementById('search'); s.value = 'task-01234'; \
           s.dispatchEvent(new Event('input')); })()",
    );
    assert_eq!(cards(&mut page), Some(1));
    assert_eq!(chips(&mut page), Some(1));
    assert_eq!(
        page.eval("document.querySelector('.worker:not(.hidden)').dataset.worker"),
        json!("w12")
    );
    // Cleared and expanded, every task is on the page; grouped by state, the labels count them.
    page.eval(
        "(() => { const s = document.getElementById('search'); s.value = ''; \
           s.dispatchEvent(new Event('input')); document.getElementById('expand').click(); })()",
    );
    assert_eq!(chips(&mut page), Some(5000));
    page.eval("document.getElementById('by-state').click()");
    let label =
        page.eval("document.querySelector('[data-worker=\"w00\"] .group-label').textContent");
    assert_eq!(label, json!("failed (2)"));
    println!(
        "MEASURE console_draw_50x5000_ms={:.0}",
        drawn_ms.as_f64().unwrap_or(-1.0)
    );
    drop(browser);
    drop(console);
}
