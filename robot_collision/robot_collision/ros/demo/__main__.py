"""``python -m robot_collision.ros.demo``."""

from .run import main

raise SystemExit(main())
