from judgebench.compare.cli import main

raise SystemExit(main())
