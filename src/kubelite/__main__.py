from kubelite.cli import main

raise SystemExit(main())
