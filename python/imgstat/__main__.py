"""python -m imgstat ARGS...: the imgstat program that came with this
package (the command line, exactly), with the same arguments and exit
status."""

import os
import sys

from . import program


def main() -> None:
    path = program()
    if not os.access(path, os.X_OK):
        sys.exit(f"imgstat: the program is missing from this package ({path})")
    os.execv(path, [path] + sys.argv[1:])


if __name__ == "__main__":
    main()
