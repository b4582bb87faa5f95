"""What a grading run reports, made from the result records alone (grader/results.py: the
records, the stage verdict, the versioned JSON of result.schema.json).

    scorecard.py   the terminal scorecard; progress.py the live progress bars
    console.py     the console every command prints to
    junit.py, gradescope.py, markdown.py   the formats other tools read
    text.py        the wording they share (hidden cases stay hidden in every format)
    pages.py       the HTML pages' templates (templates/), which escape every value:
                   picture_html.py, class_page.py, feedback_page.py draw them
"""
