"""Hidden checks for graph-routes: edges, Dijkstra with ties, components, topological order,
cycles and the text format."""

import os
import tempfile

from graphroutes import CycleError, Graph, ParseError


def _graph(*edges):
    graph = Graph()
    for edge in edges:
        graph.add_edge(*edge)
    return graph


def test_nodes_edges_and_replaced_weights():
    graph = _graph(("b", "c", 2), ("a", "b"), ("b", "c", 5))
    graph.add_node("z")
    graph.add_node("a")
    assert graph.nodes() == ["a", "b", "c", "z"]
    assert graph.edges() == [("a", "b", 1), ("b", "c", 5)]
    try:
        graph.add_edge("a", "c", -1)
    except ValueError:
        pass
    else:
        raise AssertionError("a negative weight must raise ValueError")
    assert graph.edges() == [("a", "b", 1), ("b", "c", 5)]


def test_shortest_path_prefers_the_cheaper_detour():
    graph = _graph(("A", "D", 10), ("A", "B", 2), ("B", "C", 3), ("C", "D", 1), ("B", "D", 7))
    assert graph.shortest_path("A", "D") == (6, ["A", "B", "C", "D"])
    assert graph.shortest_path("B", "D") == (4, ["B", "C", "D"])
    graph.add_edge("A", "D", 5.5)
    assert graph.shortest_path("A", "D") == (5.5, ["A", "D"])


def test_unreachable_same_node_and_unknown_nodes():
    graph = _graph(("a", "b", 1), ("c", "a", 1))
    graph.add_node("lonely")
    assert graph.shortest_path("b", "a") is None
    assert graph.shortest_path("a", "lonely") is None
    assert graph.shortest_path("a", "a") == (0, ["a"])
    for src, dst in (("a", "nope"), ("nope", "a")):
        try:
            graph.shortest_path(src, dst)
        except KeyError:
            continue
        raise AssertionError(f"shortest_path({src!r}, {dst!r}) must raise KeyError")


def test_ties_go_to_fewest_edges_then_smallest_names():
    graph = _graph(("s", "x", 1), ("x", "y", 1), ("y", "t", 1), ("s", "m", 2), ("m", "t", 1))
    assert graph.shortest_path("s", "t") == (3, ["s", "m", "t"])
    graph = _graph(("s", "q", 1), ("q", "t", 1), ("s", "b", 1), ("b", "t", 1), ("s", "k", 2))
    graph.add_edge("k", "t", 0)
    assert graph.shortest_path("s", "t") == (2, ["s", "b", "t"])
    graph = _graph(("s", "z", 0.5), ("z", "t", 0.25), ("s", "a", 0.25), ("a", "t", 0.5))
    assert graph.shortest_path("s", "t") == (0.75, ["s", "a", "t"])


def test_zero_weights_and_larger_graph():
    graph = Graph()
    for i in range(200):
        graph.add_edge(f"n{i}", f"n{i + 1}", 1)
        graph.add_edge(f"n{i}", f"n{i + 2}", 3)
    graph.add_edge("n0", "n150", 0)
    cost, path = graph.shortest_path("n0", "n200")
    assert cost == 50 and path[:2] == ["n0", "n150"] and path[-1] == "n200"
    assert len(path) == 52


def test_components_ignore_direction():
    graph = _graph(("d", "a"), ("b", "c"), ("e", "b"), ("x", "y"), ("y", "d"))
    graph.add_node("m")
    assert graph.components() == [["a", "d", "x", "y"], ["b", "c", "e"], ["m"]]
    assert Graph().components() == []


def test_topological_order_picks_the_smallest_ready_node():
    graph = _graph(("wake", "shower"), ("wake", "coffee"), ("coffee", "work"), ("shower", "work"))
    graph.add_node("alarm")
    graph.add_edge("dress", "work")
    assert graph.topological_order() == ["alarm", "dress", "wake", "coffee", "shower", "work"]
    assert Graph().topological_order() == []


def test_a_cycle_names_a_node_on_it():
    graph = _graph(("a", "b"), ("b", "c"), ("c", "b"), ("c", "d"), ("d", "e"), ("0", "a"))
    try:
        graph.topological_order()
    except CycleError as error:
        assert isinstance(error, ValueError)
        assert error.node in ("b", "c"), error.node
        assert str(error) == f"cycle through {error.node}"
    else:
        raise AssertionError("a graph with a cycle must raise CycleError")


def test_a_self_loop_is_a_cycle():
    graph = _graph(("a", "b"), ("b", "b"), ("b", "c"))
    try:
        graph.topological_order()
    except CycleError as error:
        assert error.node == "b" and str(error) == "cycle through b"
    else:
        raise AssertionError("a self-loop must raise CycleError")


def test_from_text_and_load():
    text = (
        "# city roads\n"
        "\n"
        "Oslo -> Bergen 7\n"
        "   Bergen   ->  Stavanger\t2.5\n"
        "  # an indented comment\n"
        "Oslo -> Stavanger\n"
        "Tromso\n"
        "north_pole.base-1 -> Tromso 12\n"
    )
    graph = Graph.from_text(text)
    assert graph.nodes() == ["Bergen", "Oslo", "Stavanger", "Tromso", "north_pole.base-1"]
    assert graph.edges() == [
        ("Bergen", "Stavanger", 2.5),
        ("Oslo", "Bergen", 7),
        ("Oslo", "Stavanger", 1),
        ("north_pole.base-1", "Tromso", 12),
    ]
    assert isinstance(graph.edges()[1][2], int) and isinstance(graph.edges()[0][2], float)
    with tempfile.TemporaryDirectory() as folder:
        path = os.path.join(folder, "roads.txt")
        with open(path, "w", encoding="utf-8") as handle:
            handle.write(text)
        loaded = Graph.load(path)
    assert loaded.edges() == graph.edges()
    assert loaded.shortest_path("Oslo", "Stavanger") == (1, ["Oslo", "Stavanger"])


def test_bad_lines_raise_parse_error_with_the_line_number():
    cases = [
        ("a -> b\nb -> c x\n", 2),
        ("# header\n\na -> b -2\n", 3),
        ("a -> \n", 1),
        ("a b\n", 1),
        ("a -> b 1 2\n", 1),
        ("ok\nnot/a/name -> b\n", 2),
        ("a => b\n", 1),
    ]
    for text, line in cases:
        try:
            Graph.from_text(text)
        except ParseError as error:
            assert isinstance(error, ValueError)
            assert error.line == line, (text, error.line)
            assert str(error).startswith(f"line {line}: "), str(error)
        else:
            raise AssertionError(f"{text!r} must raise ParseError")
