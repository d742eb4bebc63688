"""Hidden checks for json-schema-lite: types, keywords, paths, error order, schema errors."""

from schemalite import SchemaError, is_valid, validate

PERSON = {
    "type": "object",
    "required": ["name", "age"],
    "properties": {
        "name": {"type": "string", "minLength": 1},
        "age": {"type": "integer", "minimum": 0, "maximum": 150},
        "email": {"type": ["string", "null"], "pattern": "@"},
        "tags": {"type": "array", "items": {"type": "string", "maxLength": 5}},
        "address": {
            "type": "object",
            "required": ["city"],
            "properties": {"city": {"type": "string"}, "zip": {"type": "string"}},
        },
    },
}


def test_a_valid_value_has_no_errors():
    person = {
        "name": "Ada",
        "age": 36,
        "email": None,
        "tags": ["math", "code"],
        "address": {"city": "London"},
        "extra": [1, 2, 3],
    }
    assert validate(person, PERSON) == []
    assert is_valid(person, PERSON) is True
    assert validate("anything", {}) == []


def test_type_names_and_bools():
    assert validate(True, {"type": "integer"}) == ["/: expected type integer, got boolean"]
    assert validate(False, {"type": "number"}) == ["/: expected type number, got boolean"]
    assert validate(3, {"type": "number"}) == []
    assert validate(2.5, {"type": "integer"}) == ["/: expected type integer, got number"]
    assert validate(None, {"type": "object"}) == ["/: expected type object, got null"]
    assert validate([1], {"type": "string"}) == ["/: expected type string, got array"]
    assert validate({}, {"type": "array"}) == ["/: expected type array, got object"]
    assert validate("x", {"type": "boolean"}) == ["/: expected type boolean, got string"]
    assert validate(7, {"type": ["string", "null"]}) == [
        "/: expected type string|null, got integer"
    ]
    assert validate((1, 2), {"type": "array"}) == ["/: expected type array, got tuple"]
    assert is_valid(None, {"type": ["null", "integer"]}) is True


def test_a_failed_type_stops_the_other_keywords():
    schema = {"type": "string", "minLength": 3, "enum": ["abc"], "pattern": "^a"}
    assert validate(12, schema) == ["/: expected type string, got integer"]
    nested = {"type": "object", "required": ["a"], "properties": {"a": {"type": "integer"}}}
    assert validate([{"a": "x"}], nested) == ["/: expected type object, got array"]


def test_required_and_nested_property_paths():
    errors = validate({"age": -1, "address": {"zip": 12}}, PERSON)
    assert errors == [
        "/: missing required key name",
        "/age: -1 is less than minimum 0",
        "/address: missing required key city",
        "/address/zip: expected type string, got integer",
    ]
    assert is_valid({"age": 1}, PERSON) is False


def test_items_use_list_indexes_in_paths():
    schema = {"type": "array", "items": {"type": "object", "properties": {"n": {"maximum": 9}}}}
    assert validate([{"n": 1}, {"n": 10}, "x", {"n": 12.5}], schema) == [
        "/1/n: 10 is greater than maximum 9",
        "/2: expected type object, got string",
        "/3/n: 12.5 is greater than maximum 9",
    ]
    assert validate({"tags": ["ok", "toolong", 3]}, PERSON["properties"]["tags"]) == [
        "/: expected type array, got object"
    ]
    person = {"name": "Bo", "age": 5, "tags": ["ok", "toolong", 3]}
    assert validate(person, PERSON) == [
        "/tags/1: length 7 is greater than maxLength 5",
        "/tags/2: expected type string, got integer",
    ]


def test_enum():
    schema = {"enum": ["red", "green", 3, None]}
    assert validate("green", schema) == []
    assert validate(None, schema) == []
    assert validate(3.0, schema) == []
    assert validate("blue", schema) == ["/: value is not one of the enum values"]
    assert validate({"c": "blue"}, {"properties": {"c": schema}}) == [
        "/c: value is not one of the enum values"
    ]


def test_minimum_and_maximum_are_inclusive_and_only_for_numbers():
    schema = {"minimum": 1.5, "maximum": 10}
    assert validate(1.5, schema) == [] and validate(10, schema) == []
    assert validate(1, schema) == ["/: 1 is less than minimum 1.5"]
    assert validate(10.25, schema) == ["/: 10.25 is greater than maximum 10"]
    assert validate("0", schema) == []
    assert validate(True, {"maximum": 0}) == []
    assert validate(None, schema) == []


def test_string_lengths_and_pattern():
    schema = {"minLength": 2, "maxLength": 4, "pattern": "[0-9]+"}
    assert validate("a12", schema) == []
    assert validate("é", schema) == [
        "/: length 1 is less than minLength 2",
        "/: does not match pattern [0-9]+",
    ]
    assert validate("abcdef", schema) == [
        "/: length 6 is greater than maxLength 4",
        "/: does not match pattern [0-9]+",
    ]
    assert validate("ab1", {"pattern": "^[a-z]+$"}) == ["/: does not match pattern ^[a-z]+$"]
    assert validate(12345, schema) == []


def test_error_order_on_one_value_and_depth_first():
    schema = {
        "type": "object",
        "required": ["z", "a"],
        "properties": {
            "b": {"type": "string", "enum": ["aaaaaaa"], "maxLength": 3, "pattern": "^x"},
            "a": {"type": "array", "items": {"minimum": 0}},
        },
    }
    value = {"a": [-1, 5, -2], "b": "yyyy"}
    assert validate(value, schema) == [
        "/: missing required key z",
        "/b: value is not one of the enum values",
        "/b: length 4 is greater than maxLength 3",
        "/b: does not match pattern ^x",
        "/a/0: -1 is less than minimum 0",
        "/a/2: -2 is less than minimum 0",
    ]


def test_keys_are_escaped_in_paths():
    schema = {"properties": {"a/b": {"type": "integer"}, "m~n": {"type": "integer"}}}
    assert validate({"a/b": "x", "m~n": "y"}, schema) == [
        "/a~1b: expected type integer, got string",
        "/m~0n: expected type integer, got string",
    ]


def test_bad_schemas_raise_schema_error_before_validating():
    bad = [
        {"type": "text"},
        {"type": ["string", "float"]},
        {"minimun": 3},
        {"properties": {"never": {"type": "object", "properties": {"x": {"format": "email"}}}}},
        {"type": "array", "items": {"maxItems": 2}},
        {"properties": {"x": "not a schema"}},
    ]
    for schema in bad:
        for function in (validate, is_valid):
            try:
                function({}, schema)
            except SchemaError as error:
                assert isinstance(error, ValueError)
                continue
            raise AssertionError(f"{function.__name__} must reject {schema!r}")
