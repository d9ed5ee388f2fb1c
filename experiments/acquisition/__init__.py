"""The active-learning study and the report's joint and acquisition section
(docs/joint_and_acquisition.md)."""
