"""A wire reply is one record at both ends: what the child sends of a recorded call is the
`Proposed` the grader reads back, field by field, with the shape the grader checks."""

from grader.sandbox.child import RECORD_REPLY
from grader.sandbox.outcomes import Proposed


def test_the_childs_reply_is_the_shape_the_grader_checks():
    assert set(Proposed().reply()) == set(RECORD_REPLY)


def test_a_reply_read_back_is_the_record_sent_but_the_graders_own_field():
    sent = Proposed(proposal={"steps": []}, error="boom", refused="r", refused_launch=True,
                    launches=2, host=["h"])
    assert Proposed.from_reply(sent.reply()) == sent
    sent.failure = "set by the grader"
    assert "failure" not in sent.reply() and Proposed.from_reply(sent.reply()).failure is None
