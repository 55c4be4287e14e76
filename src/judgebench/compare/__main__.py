from judgebench.compare.entry import main

raise SystemExit(main())
