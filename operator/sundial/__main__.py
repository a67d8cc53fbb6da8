"""``python -m sundial`` runs the ``sundial`` command."""

import sys

from sundial.cli.main import main

sys.exit(main())
