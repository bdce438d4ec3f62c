from lore.cli import main

raise SystemExit(main())
