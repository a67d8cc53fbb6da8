"""``python -m sundial`` runs the ``sundial`` command."""

import sys

from sundial.cli.commands.main import main

sys.exit(main())
