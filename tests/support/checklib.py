"""What the Python checks run by tests/support/pycheck.sh share: the failure count
and the way they run imgstat."""
import subprocess
import sys

failures = 0


def fail(msg):
    """One failed check, said as FAIL: msg."""
    global failures
    failures += 1
    print("FAIL: " + msg)


def run(imgstat, *args):
    """imgstat ARGS: the completed process, its output as text."""
    return subprocess.run([imgstat] + list(args), capture_output=True,
                          text=True)


def finish(name):
    """Says how many checks failed and exits accordingly."""
    print("%s: %d failures" % (name, failures))
    sys.exit(1 if failures else 0)
