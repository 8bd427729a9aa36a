"""Tools: plain-Python utilities on top of the core (no rclpy).

Owns kernel warm-up (:mod:`.warmup`), matplotlib figures of a robot and its world
(:mod:`.plotting`) and the command-line tools. May import every core layer; never ROS.
"""
