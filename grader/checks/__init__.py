"""pytest modules that grade a stage; driven by grader.grading, never collected by students."""
