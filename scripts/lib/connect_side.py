"""What the benchmark scripts that run Kafka Connect beside kroupier share (scripts/bench-peers,
scripts/bench-eos): the JVM options Connect's workers run with, its Maven build, and a free port.

One home, so that both comparisons run Connect the same way: a figure of one script and a figure
of the other come from the same JVM and the same connect-runtime build.
"""
import json
import socket
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent.parent

# Connect's own launcher (bin/connect-distributed.sh) uses G1 with these options; the heap is
# kept small so that several workers fit beside the broker.
CONNECT_JVM = ["-Xms256m", "-Xmx512m", "-XX:+UseG1GC", "-XX:MaxGCPauseMillis=20",
               "-XX:InitiatingHeapOccupancyPercent=35", "-XX:+ExplicitGCInvokesConcurrent",
               "-Djava.awt.headless=true"]


def free_port():
    """A TCP port on 127.0.0.1 that nothing listened on a moment ago (for a Connect worker's
    REST listener)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def build_connect(version, log):
    """Builds bench/java/connect against connect-runtime `version` (Maven Central) into the
    cargo target directory, and returns that directory."""
    meta = json.loads(subprocess.run(["cargo", "metadata", "--format-version", "1", "--no-deps"],
                                     cwd=ROOT, check=True, capture_output=True, text=True).stdout)
    java_dir = Path(meta["target_directory"]) / "bench-java-connect" / version
    log(f"building the Connect side with connect-runtime {version} (mvn package)")
    subprocess.run(["mvn", "-B", "-q", "package", f"-Dkafka.version={version}",
                    f"-Dbench.build.dir={java_dir}"], cwd=ROOT / "bench" / "java" / "connect",
                   check=True)
    return java_dir
