"""The small part of JSON Schema that grader/result.schema.json uses, to validate against it."""

TYPES = {
    "object": dict, "array": list, "string": str, "boolean": bool, "null": type(None),
    "integer": int, "number": (int, float),
}


def errors(value, schema, where="$"):
    """Every place where `value` breaks `schema`, as 'path: problem' strings."""
    found = []
    if "const" in schema and value != schema["const"]:
        found.append(f"{where}: expected {schema['const']!r}")
    if "enum" in schema and value not in schema["enum"]:
        found.append(f"{where}: {value!r} not in {schema['enum']}")
    if "type" in schema:
        names = schema["type"] if isinstance(schema["type"], list) else [schema["type"]]
        ok = any(isinstance(value, TYPES[n]) and not (isinstance(value, bool) and n in
                 ("integer", "number")) for n in names)
        if not ok:
            return found + [f"{where}: expected {names}, got {type(value).__name__}"]
    if isinstance(value, dict):
        found += [f"{where}.{key}: missing" for key in schema.get("required", []) if key not in value]
        props = schema.get("properties", {})
        extra = schema.get("additionalProperties", True)
        for key, item in value.items():
            if key in props:
                found += errors(item, props[key], f"{where}.{key}")
            elif extra is False:
                found.append(f"{where}.{key}: not allowed")
            elif isinstance(extra, dict):
                found += errors(item, extra, f"{where}.{key}")
    if isinstance(value, list) and "items" in schema:
        for i, item in enumerate(value):
            found += errors(item, schema["items"], f"{where}[{i}]")
    return found
