"""YAML aliases bounded as go-yaml v2 bounds them (decode.go): more than 100 nodes decoded
through aliases, more than 1,000 decoded in all, and a share of aliased nodes past
``allowedAliasRatio`` (99% up to 400,000 nodes) is "document contains excessive aliasing"."""

from __future__ import annotations

import pytest

from kubelite.api.encoding import yamlbody

EXCESSIVE = "yaml: document contains excessive aliasing"


def shared_list(items: int, aliases: int) -> bytes:
    """A list of ``items`` scalars, then a list of ``aliases`` aliases of it. go-yaml decodes
    6 + items + aliases * (2 + items) nodes (the document, the mapping, its two keys, the two
    lists, the scalars; each alias node and, through it, the list and its scalars), of which
    aliases * (1 + items) through an alias."""
    listed = ",".join(["x"] * items)
    refs = ",".join(["*a"] * aliases)
    return f"a: &a [{listed}]\nb: [{refs}]\n".encode()


def test_the_aliased_share_may_reach_99_percent_and_not_pass_it() -> None:
    # 199 aliases of 200 scalars: 39,999 of 40,404 nodes aliased (98.9998%)
    value = yamlbody.load(shared_list(200, 199))
    assert len(value["b"]) == 199
    assert value["b"][0] == ["x"] * 200
    # one alias more: 40,200 of 40,606 (99.0001%)
    with pytest.raises(yamlbody.YAMLError) as caught:
        yamlbody.load(shared_list(200, 200))
    assert str(caught.value) == EXCESSIVE
    # whatever the share, 100 nodes through aliases or 1,000 decoded are not excessive
    assert len(yamlbody.load(shared_list(1, 50))["b"]) == 50  # 100 of 157
    assert len(yamlbody.load(shared_list(9, 88))["b"]) == 88  # 880 of 983


def test_nested_aliases_count_every_node_they_stand_for() -> None:
    # three levels of ten: each alias of c stands for 111 nodes, 11,100 in all
    text = 'a: &a ["x","x","x","x","x","x","x","x","x","x"]\n'
    text += "b: &b [" + ",".join(["*a"] * 10) + "]\n"
    text += "c: &c [" + ",".join(["*b"] * 10) + "]\n"
    assert len(yamlbody.load(text.encode())["c"]) == 10  # 1,110 of 1,182 nodes aliased: 94%
    with pytest.raises(yamlbody.YAMLError) as caught:
        yamlbody.load((text + "d: [" + ",".join(["*c"] * 10) + "]\n").encode())
    assert str(caught.value) == EXCESSIVE


def test_merge_keys_are_read_and_counted_as_go_yaml_counts_them() -> None:
    text = b"base: &base {x: 1, y: 2}\nc:\n  <<: *base\n  z: 3\nd:\n  <<: [*base, {w: 4}]\n"
    assert yamlbody.load(text) == {
        "base": {"x": 1, "y": 2},
        "c": {"x": 1, "y": 2, "z": 3},
        "d": {"x": 1, "y": 2, "w": 4},
    }

    def merging(times: int) -> bytes:
        """A mapping of 200 keys merged into ``times`` mappings: go-yaml decodes 404 + 404 *
        times nodes (not the merge keys), 401 * times through the alias."""
        text = "base: &base {" + ", ".join(f"k{i}: v" for i in range(200)) + "}\n"
        return (text + "".join(f"m{i}:\n  <<: *base\n" for i in range(times))).encode()

    assert len(yamlbody.load(merging(384))["m383"]) == 200  # 153,984 of 155,540: 98.9996%
    with pytest.raises(yamlbody.YAMLError) as caught:
        yamlbody.load(merging(385))  # 154,385 of 155,944: 99.0003%
    assert str(caught.value) == EXCESSIVE


def test_an_alias_inside_its_own_anchor_is_refused() -> None:
    for text, name in [(b"a: &loop [1, *loop]\n", "loop"), (b"a: &m\n  b: *m\n", "m")]:
        with pytest.raises(yamlbody.YAMLError) as caught:
            yamlbody.load(text)
        assert str(caught.value) == f"yaml: anchor '{name}' value contains itself"
