"""``python -m fastpu``: the command line."""

from fastpu.cli import main

raise SystemExit(main())
