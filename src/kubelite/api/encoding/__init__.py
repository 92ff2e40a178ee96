"""Objects as bytes and versions: JSON and YAML bodies read as kube-apiserver reads them
(:mod:`.jsoncodec`, :mod:`.yamlbody`), built-in kinds decoded as their Go types decode
(:mod:`.decoding`, :mod:`.gotypes`, :mod:`.quantity`), resourceVersion parsed and stamped
(:mod:`.resourceversion`), an object's key and stored bytes (:mod:`.stored`) and conversion
between the versions of one stored kind (:mod:`.conversion`).
"""
