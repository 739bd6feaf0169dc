#!/usr/bin/python3
# check.py FILE...: check Kubernetes manifests offline against the API types
# of Debian's python3-kubernetes (its models are generated from the
# Kubernetes OpenAPI schema): every object's kind is known, every key is a
# field of its type (unknown keys are errors: a misspelt key is ignored by a
# lenient apply), every value has the field's type, required fields are there.
# What it cannot check: server-side defaults and admission (PodSecurity),
# values of enums, the Localhost seccomp profile's presence on nodes.
import sys
import yaml
import kubernetes.client as k8s

PRIMITIVE = {"str": str, "int": int, "bool": bool, "float": (int, float), "object": object,
             "datetime": str, "date": str}
errors = []


def model_for(kind, api_version):
    version = api_version.split("/")[-1].capitalize()
    group = api_version.split("/")[0] if "/" in api_version else ""
    prefix = {"apps": "V1", "": "V1"}.get(group, version)
    name = prefix + kind if group in ("apps", "") else version + kind
    return getattr(k8s, name, None)


def walk(value, typ, path):
    if value is None:
        return
    if typ.startswith("list["):
        if not isinstance(value, list):
            errors.append(f"{path}: want a list")
            return
        for i, v in enumerate(value):
            walk(v, typ[5:-1], f"{path}[{i}]")
        return
    if typ.startswith("dict("):
        if not isinstance(value, dict):
            errors.append(f"{path}: want a mapping")
            return
        inner = typ[5:-1].split(", ", 1)[1]
        for k, v in value.items():
            walk(v, inner, f"{path}.{k}")
        return
    if typ in PRIMITIVE:
        if typ == "str" and isinstance(value, (int, float)) and path.endswith(("cpu", "memory", "port", "targetPort", "maxUnavailable")):
            return  # IntOrString and Quantity
        if not isinstance(value, PRIMITIVE[typ]):
            errors.append(f"{path}: want {typ}, have {type(value).__name__}")
        return
    cls = getattr(k8s, typ, None)
    if cls is None:
        errors.append(f"{path}: unknown type {typ}")
        return
    if not isinstance(value, dict):
        errors.append(f"{path}: want a {typ} mapping")
        return
    by_json = {j: a for a, j in cls.attribute_map.items()}
    for k, v in value.items():
        if k not in by_json:
            errors.append(f"{path}: unknown field '{k}' in {typ}")
            continue
        walk(v, cls.openapi_types[by_json[k]], f"{path}.{k}")
    # required fields: the model's constructor refuses None for them
    try:
        cls(**{a: value.get(j) for j, a in by_json.items()},
            local_vars_configuration=k8s.Configuration())
    except ValueError as e:
        errors.append(f"{path}: {e}")


for f in sys.argv[1:]:
    with open(f) as fh:
        for n, doc in enumerate(yaml.safe_load_all(fh)):
            if not doc:
                continue
            kind, av = doc.get("kind"), doc.get("apiVersion")
            cls = model_for(kind or "", av or "")
            if cls is None:
                errors.append(f"{f}#{n}: unknown kind {kind} of {av}")
                continue
            walk(doc, cls.__name__, f"{f}#{n}:{kind}")
            print(f"{f}: {kind} {doc['metadata']['name']}: checked as {cls.__name__}")
for e in errors:
    print("error:", e, file=sys.stderr)
sys.exit(1 if errors else 0)
