"""The prompt-injection signals: one maintained table of patterns, their weights and what they mean.

Each signal is a regular expression over *folded* text (see `dory.memory.injection`): lowercase,
accents and invisible characters gone, look-alike letters mapped to Latin. The sources below are
written naturally (accents, Cyrillic, CJK) and folded the same way when they are compiled, so
"précédentes" here matches "precedentes", "PRÉCÉDENTES" and "prеcеdеntеs" (Cyrillic е) in a note.
Sources never use an uppercase escape (`\\S`, `\\W`, ...): folding lowercases the source.

Weights, with REJECT_AT = 1.0 and SUSPECT_AT = 0.5 (dory.memory.injection):

- 1.0, rejected alone: orders to drop earlier instructions, jailbreak personas, requests for the
  system prompt. These phrasings have no business in a memory note.
- 0.75: asking to repeat "the text above" (also how people talk about documents, so not alone).
- 0.5, quarantined alone, rejected with any other signal: role markers and chat-template tokens,
  "new instructions:", text addressed to an AI reader, hiding things from the user, sending secrets
  to an address, "you have no restrictions". Each also has honest uses (a note about tokenizers, an
  instruction sheet), which is why they only add up.

Inside markdown code a hit counts `in_code` of its weight: half for phrases, nothing for role
markers (a tokenizer note quotes `<|im_start|>`; quoting does not make it an order).

Languages: English, Spanish, French, German, Portuguese, Italian, Russian, Chinese and Japanese for
ignoring instructions, jailbreak personas, asking for the system prompt, "new instructions:" and
"you have no restrictions"; hiding from the user has a few of them; the rest is English only.

Tuned on tests/memory/fixtures/injection_phrasings.yaml and on the real notes of the mdcorpus bench
set (4 of its 51,117 notes are quarantined, none refused); never on the held-out phrasings
(scripts/bench/injection_rates.py prints both).
"""

from __future__ import annotations

from typing import NamedTuple


class SignalSpec(NamedTuple):
    name: str
    weight: float
    description: str
    source: str
    # Inside markdown code a hit counts this much of its weight: a phrase quoted as code is half an
    # order still (a model reads it all the same); a role marker quoted as code is a mention.
    in_code: float = 0.5


# Between two words: spaces and line breaks, markdown emphasis, quotes, list and quote markers,
# punctuation. Instructions split over lines or wrapped in `**`/`>`/`-` still read as one phrase.
S = r"[\s*_~`'\"\-–—>|#.,:;!?()\[\]]+"
WORD = r"[^\s]+"


def _any(*options: str) -> str:
    return "(?:" + "|".join(options) + ")"


def _words(options: str) -> str:
    """An alternation of the space-separated options; `_` inside one stands for a word separator."""
    return _any(*(option.replace("_", S) for option in options.split()))


def _drop(verb: str, fill: str, qual: str, noun: str, after: str) -> str:
    """verb, a few filler words, then a qualified noun ("all previous instructions") or a noun
    qualified after it ("instructions above"): an unqualified "ignore the instructions" is ordinary."""
    return rf"\b{verb}(?:{S}{fill}){{0,3}}{S}(?:{qual}(?:{S}{fill}){{0,3}}{S}{noun}|{noun}{S}{after})\b"


def _drop_last(qual: str, fill: str, noun: str, verb: str) -> str:
    """The same order with the verb last (a German infinitive: "alle Anweisungen ignorieren")."""
    return rf"\b{qual}(?:{S}(?:{fill}|{qual})){{0,2}}{S}{noun}(?:{S}{WORD}){{0,2}}{S}{verb}\b"


# --- ignore previous instructions ------------------------------------------------------------------

_EN_FILL = _words(
    "the all any of and or your my our these those every each previous prior above earlier preceding "
    "foregoing former original initial system developer safety content given that you were have been "
    "received"
)
_EN_QUAL = _words(
    "all any every your previous prior above earlier preceding foregoing former original initial system "
    "developer safety"
)
_EN_NOUN = _words(
    "instructions? directives? prompts? guidance orders commands rules guidelines guardrails restrictions "
    "policies constraints programming filters"
)

_IGNORE = (
    _drop(
        _words(
            "ignore disregard forget override overrule discard dismiss skip bypass neglect abandon set_aside "
            "pay_no_attention_to stop_(?:following|obeying) (?:do_not|don't)_(?:follow|obey)"
        ),
        _EN_FILL,
        _EN_QUAL,
        _EN_NOUN,
        _words("above before so_far earlier you(?:'ve|_have)?_(?:been_)?(?:given|received|got)"),
    ),
    # "all previous instructions are void"
    rf"\b{_EN_QUAL}(?:{S}{_EN_FILL}){{0,3}}{S}{_EN_NOUN}{S}(?:are|is|have{S}been|has{S}been)(?:{S}(?:now|hereby))?"
    rf"{S}(?:void|null|nullified|cancell?ed|revoked|invalid|invalidated|obsolete|overridden|lifted|suspended"
    rf"|rescinded|no{S}longer{S}(?:valid|in{S}effect|apply))\b",
    _drop(
        _words(
            "ignora ignore ignorad ignoren ignorar olvida olvide olvidad olviden olvidar descarta descarte "
            "omite omita haz_caso_omiso_(?:de|a) hagan?_caso_omiso_(?:de|a) no_hagas_caso_(?:de|a) "
            "deja_de_seguir"
        ),
        _words("las los la el de a tus sus mis y o todas todos lo"),
        _words("todas todos cualquier tus anteriores previas precedentes"),
        _words("instrucciones indicaciones órdenes reglas directrices directivas normas pautas"),
        _words(
            "anteriores previas precedentes de_arriba originales iniciales del_sistema "
            "que_(?:te|le|les)_(?:dieron|di|dimos)"
        ),
    ),
    _drop(
        _words(
            "ignore ignorez ignorer oublie oubliez oublier ne_(?:tiens|tenez)_pas_compte ne_pas_tenir_compte "
            "(?:fais|faites)_abstraction (?:passe|passez)_outre (?:laisse|laissez)_tomber"
        ),
        _words("les la le des de du d tes vos toutes tous ces et aux"),
        _words("toutes tous tes vos précédentes antérieures"),
        _words("instructions consignes directives règles ordres indications restrictions"),
        _words("précédentes antérieures ci_dessus plus_haut initiales d'origine originales du_système système"),
    ),
    _drop(
        _words(
            "ignoriere ignorier ignorieren_sie vergiss vergessen_sie missachte missachten_sie beachte_nicht "
            "verwirf verwerfen_sie"
        ),
        _words("alle alles die der den deine ihre sämtliche und bisher vorher zuvor"),
        _words(
            "alle sämtliche deine ihre vorherigen bisherigen vorigen obigen vorangegangenen früheren ursprünglichen"
        ),
        _words("anweisungen instruktionen befehle regeln vorgaben richtlinien einschränkungen"),
        _words("von_(?:oben|vorher|zuvor) oben"),
    ),
    _drop_last(
        _words("alle sämtliche deine vorherigen bisherigen vorigen obigen früheren"),
        _words("die der den deine ihre"),
        _words("anweisungen instruktionen befehle regeln vorgaben richtlinien"),
        _words("ignorieren vergessen missachten nicht_(?:mehr_)?beachten außer_acht_lassen"),
    ),
    _drop(
        _words(
            "ignore ignora ignorem ignorar esqueça esquece esqueçam esquecer desconsidere desconsidera "
            "desconsiderem despreze descarte (?:deixe|pare)_de_seguir não_siga"
        ),
        _words("as os a o de das dos suas seus tuas teus e todas todos"),
        _words("todas todos suas seus quaisquer anteriores prévias"),
        _words("instruções orientações regras diretrizes ordens indicações restrições"),
        _words("anteriores prévias acima iniciais originais do_sistema que_(?:você|te)_(?:recebeu|deram)"),
    ),
    _drop(
        _words(
            "ignora ignorate ignori ignorare dimentica dimenticate dimentichi dimenticare trascura tralascia "
            "non_considerare non_tenere_conto_(?:di|delle|degli) smetti_di_seguire"
        ),
        _words("le la il lo gli i di delle degli tue tuoi tutte tutti e"),
        _words("tutte tutti tue tuoi precedenti"),
        _words("istruzioni indicazioni regole direttive ordini restrizioni"),
        _words("precedenti di_sopra sopra iniziali originali di_sistema del_sistema di_prima ricevute"),
    ),
    _drop(
        _words(
            "игнорируй игнорируйте проигнорируй проигнорируйте игнорировать забудь забудьте забыть "
            "не_обращай(?:те)?_внимания_на отбрось отбросьте пренебреги не_следуй(?:те)? перестань_следовать"
        ),
        _words("все всё свои твои ваши эти и на о об"),
        _words(
            "все всё любые предыдущие прежние предшествующие вышеуказанные вышеизложенные старые исходные "
            "изначальные системные свои твои"
        ),
        _words("инструкции инструкций указания указаний правила правил команды директивы"),
        _words("выше ранее до_этого"),
    ),
    # Chinese and Japanese run without spaces: a few characters of anything between the parts.
    r"(?:忽略|忽视|忽視|无视|無視|忘记|忘記|忘掉|不要理会|不要理會|别管|別管|抛开|拋開|不要遵守|不要遵循|停止遵循|跳过|跳過)"
    r".{0,6}?(?:之前|以前|先前|上面|上述|以上|前面|此前|原来|原來|原有|原始|所有|全部|一切|你的)"
    r".{0,6}?(?:指令|指示|说明|說明|规则|規則|提示|命令|设定|設定|限制|约束|約束)",
    r"(?:之前|以前|先前|上面|上述|以上|前面|所有)的?.{0,6}?(?:指令|指示|规则|規則|提示|命令|设定|設定)"
    r".{0,4}?(?:忽略|忽视|忽視|无视|無視|忘记|忘記|忘掉)",
    r"(?:以前|これまで|今まで|上記|上の|先ほど|先程|すべて|全て|最初|元)の?.{0,8}?"
    r"(?:指示|命令|ルール|指令|プロンプト|設定|制約|規則).{0,8}?(?:無視|忘れ|従わな)",
)

_IGNORE_CONTEXT = (
    rf"\b(?:ignore|disregard|forget){S}(?:everything|all|anything)(?:{S}(?:that|written|said|stated|mentioned|here))"
    rf"{{0,2}}{S}(?:above|so{S}far|(?:up{S}to|before){S}this(?:{S}(?:point|message|line))?"
    rf"|you(?:'ve|{S}have|{S}were|{S}have{S}been){S}told)\b",
    rf"\b(?:ignore|disregard|forget){S}(?:all{S}of{S})?the{S}(?:above|foregoing|preceding)"
    rf"(?=\s*[.,;:!]|\s*$|{S}(?:and|then|instead|completely|entirely)\b)",
)

# --- jailbreak personas ----------------------------------------------------------------------------

_FREE = _words("restrictions rules guidelines filters limits limitations policies censorship")
_EN_JAILBROKEN = _any(
    _words(
        "dan jailbroken unrestricted unfiltered uncensored unbound unshackled unchained amoral unaligned "
        "no_longer_(?:bound|restricted|limited|an_ai) do_anything_now"
    ),
    f"free{S}(?:of|from)(?:{S}(?:all|any|your|its)){{0,2}}{S}{_FREE}",
    f"(?:without{S}(?:any{S})?|with{S}no{S}){_FREE}",
)
_EN_PERSONA = _words(
    "you_are_now you're_now you_will_now_(?:be|act_as) "
    "from_now_on(?:_you_(?:are|will_be|will_act_as|act_as|shall_be))? act_as "
    "pretend_(?:to_be|you_are|you're)"
)
_EN_PERSONA_FILL = _words(
    "a an in my fully completely totally operating acting as ai model assistant chatbot that who is truly now entirely"
)


def _persona(opener: str, adjective: str) -> str:
    """'you are now' (in some language), up to four words, then what makes it a jailbreak."""
    return rf"\b{opener}(?:{S}{WORD}){{0,4}}?{S}{adjective}"


_JAILBREAK = (
    rf"\b{_EN_PERSONA}(?:{S}{_EN_PERSONA_FILL}){{0,5}}{S}{_EN_JAILBROKEN}\b",
    rf"\b(?:dan|jailbreak|jailbroken|unrestricted|unfiltered){S}mode\b",
    _persona(
        _words("ahora_eres a_partir_de_ahora_(?:eres|serás|actuarás_como) desde_ahora_eres"),
        _words("sin_(?:restricciones|filtros|censura|límites|reglas|limitaciones) dan desbloqueado"),
    ),
    _persona(
        _words(
            "tu_es_(?:maintenant|désormais) vous_êtes_(?:maintenant|désormais) à_partir_de_maintenant_tu_es "
            "désormais_tu_es"
        ),
        _words(
            "sans_(?:aucune_)?(?:restrictions?|filtres?|censure|limites?|règles?|contraintes?) débridée? dan "
            "libre_de_(?:toute|toutes|tout)_(?:restrictions?|règles?|contraintes?|limites?)"
        ),
    ),
    _persona(
        _words(
            "du_bist_(?:jetzt|nun|ab_sofort|ab_jetzt|von_nun_an) ab_(?:sofort|jetzt)_bist_du "
            "von_nun_an_bist_du sie_sind_(?:jetzt|nun|ab_sofort)"
        ),
        _words(r"uneingeschränkt\w* ohne_(?:einschränkungen|filter|regeln|grenzen|zensur) unzensiert\w* dan"),
    ),
    _persona(
        _words("você_agora_é agora_você_é a_partir_de_agora_(?:você_)?(?:é|será) tu_és_agora"),
        _words("sem_(?:nenhuma_)?(?:restrições|restrição|filtros|censura|limites|regras) dan desbloqueado"),
    ),
    _persona(
        _words("ora_sei adesso_sei da_ora_in_poi_sei d'ora_in_poi_sei"),
        _words("senza_(?:restrizioni|filtri|censura|limiti|regole) dan sbloccato"),
    ),
    _persona(
        _words("теперь_ты ты_теперь отныне_ты с_этого_момента_ты теперь_вы"),
        _words(r"без_(?:ограничений|цензуры|фильтров|правил) неограниченн\w* dan"),
    ),
    r"(?:你现在是|你現在是|从现在开始你是|從現在開始你是|从现在起你是|從現在起你是|现在你是|現在你是|你将成为|你將成為)"
    r".{0,10}?(?:不受限制|没有任何限制|沒有任何限制|没有限制|沒有限制|无限制|無限制|不受约束|不受約束|dan|越狱|越獄|无审查|無審查)",
    r"(?:あなたは今から|今からあなたは|これからあなたは|あなたはこれから|今後あなたは)"
    r".{0,12}?(?:制限のない|制限なし|制限がない|制約のない|dan|フィルターなし|フィルターのない|検閲のない)",
)

_NO_LIMITS = (
    rf"\byou{S}(?:now{S})?have{S}(?:no|zero){S}(?:more{S})?(?:content{S}|safety{S}|ethical{S})?"
    rf"(?:{_FREE}|policy|boundaries|constraints)\b",
    rf"\bno{S}tienes{S}(?:ninguna{S})?(?:restricciones|límites|reglas|filtros)\b",
    rf"\btu{S}n'as{S}(?:plus{S})?(?:aucune|pas{S}de){S}(?:restrictions?|limites?|règles?|filtres?)\b",
    rf"\bdu{S}hast{S}keine{S}(?:einschränkungen|regeln|grenzen|filter)\b",
    rf"\b(?:você|tu){S}não{S}tem{S}(?:nenhuma{S})?(?:restrições|restrição|limites|regras|filtros)\b",
    rf"\bnon{S}hai{S}(?:più{S})?(?:restrizioni|limiti|regole|filtri)\b",
    rf"\bу{S}(?:тебя|вас){S}нет{S}(?:никаких{S})?(?:ограничений|правил|фильтров)\b",
    r"你(?:没有|沒有)(?:任何)?(?:限制|约束|約束)",
    r"(?:制限|制約)は?(?:ありません|ない)",
)

# --- asking for the system prompt ------------------------------------------------------------------

_EN_SHOW = _words(
    "reveal print show display output repeat leak dump disclose expose recite echo share tell_me "
    "give_me send_me write_out what_(?:is|are|was|were) what's"
)
_EN_SECRET = rf"(?:system|developer|hidden|initial|original|secret|internal){S}(?:prompts?|instructions|messages?)"


def _reveal(show: str, fill: str, possessive: str, nouns: str, secret: str) -> str:
    """A verb of showing, then either "your <prompt|instructions>" or a named secret prompt."""
    return rf"\b{show}(?:{S}(?:{fill}|{possessive})){{0,3}}{S}(?:{possessive}{S}(?:{fill}{S})?{nouns}|{secret})\b"


_REVEAL = (
    rf"\b{_EN_SHOW}{S}(?:(?:me|us|the|full|entire|complete|exact|whole|verbatim|back|all|of){S}){{0,3}}your{S}"
    rf"(?:(?:full|entire|complete|exact|whole|current){S}){{0,2}}{_EN_SECRET}\b",
    rf"\b(?:reveal|leak|dump|disclose|expose|recite|exfiltrate)(?:{S}(?:the|full|entire|complete|verbatim)){{0,3}}"
    rf"{S}(?:system|developer|hidden|initial){S}(?:prompts?|instructions)\b",
    _reveal(
        _words("revela revélame muestra muéstrame dime imprime repite escribe comparte"),
        _words("me el la las los todo todas completo"),
        _words("tu tus su sus"),
        _words("prompt instrucciones indicaciones reglas"),
        _words(
            "prompt_(?:del_sistema|de_sistema|inicial|original|oculto) "
            "instrucciones_(?:del_sistema|de_sistema|ocultas|iniciales|originales|secretas|internas) "
            "mensaje_del_sistema"
        ),
    ),
    _reveal(
        _words(
            "révèle révélez montre montrez affiche affichez donne donnez répète répétez écris écrivez imprime "
            "divulgue dis dites partage récite"
        ),
        _words("moi nous le la les entier intégral complet"),
        _words("ton ta tes votre vos"),
        _words("prompt instructions consignes"),
        _words(
            "prompt_(?:système|system|initial|d'origine|caché) invite_système "
            "(?:instructions|consignes)_(?:système|du_système|initiales|cachées|secrètes|d'origine|internes)"
        ),
    ),
    _reveal(
        _words(
            "zeige? zeigen_sie gib geben_sie verrate verraten_sie nenne wiederhole drucke schreibe offenbare enthülle"
        ),
        _words("mir uns bitte den die vollständigen kompletten genauen gesamten"),
        _words("deinen deine ihren ihre"),
        _words("anweisungen instruktionen system(?:_)?prompt prompt systemanweisungen"),
        _words(
            "system(?:_)?prompt systemanweisungen system_anweisungen "
            "(?:versteckten|geheimen|ursprünglichen|initialen|internen)_(?:anweisungen|instruktionen|prompt)"
        ),
    ),
    _reveal(
        _words("revele revela mostre mostra diga imprima repita compartilhe exiba escreva"),
        _words("me o a os as todo todas completo"),
        _words("seu sua seus suas teu tua teus tuas"),
        _words("prompt instruções"),
        _words(
            "prompt_(?:do_sistema|de_sistema|inicial|original|oculto) "
            "instruções_(?:do_sistema|de_sistema|ocultas|iniciais|originais|secretas|internas) "
            "mensagem_do_sistema"
        ),
    ),
    _reveal(
        _words("rivela rivelami mostra mostrami dimmi stampa ripeti condividi scrivi svela dammi"),
        _words("mi il lo la i gli le intero completo"),
        _words("tuo tua tuoi tue"),
        _words("prompt istruzioni"),
        _words(
            "prompt_(?:di_sistema|del_sistema|iniziale|originale|nascosto) "
            "istruzioni_(?:di_sistema|del_sistema|nascoste|iniziali|originali|segrete|interne) "
            "messaggio_di_sistema"
        ),
    ),
    _reveal(
        _words(
            "покажи покажите раскрой раскройте выведи выведите повтори повторите напиши напишите сообщи "
            "назови распечатай"
        ),
        _words("мне весь все полностью"),
        _words("свой свои твой твои ваш ваши"),
        _words(r"промпт\w* инструкци\w* указани\w*"),
        _words(
            r"системн\w*_(?:промпт\w*|инструкци\w*|подсказк\w*|сообщени\w*) "
            r"(?:скрыт|исходн|первоначальн|изначальн)\w*_(?:инструкци\w*|промпт\w*|указани\w*)"
        ),
    ),
    r"(?:告诉我|告訴我|显示|顯示|输出|輸出|打印|泄露|洩露|透露|展示|重复|重複|说出|說出|给我看|給我看|列出|公开|公開)"
    r".{0,6}?(?:系统提示|系統提示|系统指令|系統指令|系统消息|系統消息|初始指令|隐藏指令|隱藏指令|你的指令|你的提示|原始指令|系统设定|系統設定)",
    r"(?:システムプロンプト|システム指示|システムメッセージ|隠された指示|隠し指示|初期指示|最初の指示|あなたの指示|あなたへの指示|あなたのプロンプト)"
    r".{0,8}?(?:教えて|表示|出力|見せて|開示|繰り返|書き出|共有)",
)

_REPEAT_ABOVE = (
    rf"\b(?:repeat|print|output|show|display|echo|recite|reproduce|copy|write{S}out|type{S}out)"
    rf"(?:{S}(?:back|out|me|us)){{0,2}}(?:{S}(?:all|everything|of|the|entire|full|whole|complete|exact|text|words"
    rf"|content|contents|message|messages|prompt|conversation|instructions|lines?|that|is|was|written|this)){{1,4}}"
    rf"{S}(?:above|before{S}this|so{S}far|preceding)\b",
)

# --- new instructions ------------------------------------------------------------------------------

_AI = _words(
    r"ai a\.i\. llms? (?:large_)?language_models? chatbots? gpt chatgpt claude copilot gemini "
    r"ai_(?:assistants?|agents?|models?|systems?) assistant"
)

_NEW_INSTRUCTIONS = (
    rf"\b(?:new|updated|revised|real|actual|true|hidden|secret|override)(?:{S}(?:system|priority|important|top))?"
    rf"{S}(?:instructions?|orders|system{S}prompt|prompt)"
    rf"(?:{S}for{S}(?:the{S}|any{S}|all{S})?{_AI})?(?:{S})?(?::|{S}(?:are|is){S}(?:to|as{S}follows)\b)",
    rf"\byour{S}(?:new|real|actual|true){S}(?:instructions|task|directives|orders|rules|purpose|goal){S}(?:are|is)\b",
    rf"\b(?:nuevas|verdaderas){S}(?:instrucciones|órdenes|reglas|directrices)(?:{S})?:|\btus{S}nuevas{S}instrucciones{S}son\b",
    rf"\bnouvelles{S}(?:instructions|consignes|directives|règles)(?:{S})?:|\b(?:tes|vos){S}nouvelles{S}(?:instructions|consignes)\b",
    rf"\bneue{S}(?:anweisungen|instruktionen|befehle|regeln|vorgaben)(?:{S})?:"
    rf"|\bdeine{S}neuen{S}(?:anweisungen|instruktionen|regeln){S}(?:sind|lauten)\b",
    rf"\bnovas{S}(?:instruções|ordens|regras|diretrizes)(?:{S})?:|\bsuas{S}novas{S}instruções{S}são\b",
    rf"\bnuove{S}(?:istruzioni|regole|direttive)(?:{S})?:|\ble{S}tue{S}nuove{S}istruzioni{S}sono\b",
    rf"\bновые{S}(?:инструкции|указания|правила|команды)(?:{S})?:|\bтвои{S}новые{S}(?:инструкции|указания)\b",
    r"新的?(?:指令|指示|规则|規則|命令|系统提示|系統提示)\s*:",
    r"新しい(?:指示|命令|ルール|指令|システムプロンプト)\s*(?::|は)",
)

# --- talking to the AI behind the user's back ------------------------------------------------------

_ADDRESSED_TO_AI = (
    rf"\b(?:note|message|notice|attention|important|reminder|instructions?|psa|warning|hey|dear|hello)"
    rf"(?:{S}(?:to|for))?(?:{S}(?:any|all|the|every|an?|you))?{S}{_AI}"
    rf"(?:{S}(?:reading|processing|parsing|summari[sz]ing|that{S}reads?|who{S}reads?)(?:{S}(?:this|it))?)?(?:{S})?[:,]",
    rf"\bif{S}you{S}are{S}(?:an?{S})?(?:ai|llm|(?:large{S})?language{S}model|chatbot|ai{S}(?:assistant|agent|model)"
    rf"|assistant|bot)\b",
    rf"\b(?:ai|llm|assistant|agent|model|bot|chatbot)s?{S}(?:reading|processing|parsing|summari[sz]ing){S}this\b",
)

_HIDE_FROM_USER = (
    rf"\b(?:do{S}not|don't|never)(?:{S}(?:ever|tell|inform|let|mention|reveal|show|disclose|alert|notify|warn))"
    rf"{{1,2}}{S}(?:this|it|these|that|any{S}of{S}this|about{S}(?:this|it))(?:{S}(?:instructions?|message|note|rule"
    rf"|request|step))?(?:{S}(?:to|with))?{S}the{S}(?:user|human|operator|owner)s?\b",
    rf"\bwithout{S}(?:telling|informing|alerting)(?:{S}(?:the|your))?{S}(?:user|human|operator|owner)\b",
    rf"\bkeep{S}(?:this|it|these{S}instructions?){S}(?:a{S})?(?:secret|hidden|confidential){S}from{S}(?:the{S})?"
    rf"(?:user|human)\b",
    rf"\b(?:quietly|secretly|covertly)(?:{S}(?:and|then))?{S}(?:send|upload|email|forward|post|transfer"
    rf"|wire|copy|delete|remove|run|execute|exfiltrate|add|insert|append)\b",
    rf"\bthe{S}user{S}(?:must|should){S}not{S}(?:know|find{S}out|see|notice|be{S}told)\b",
    rf"\bno{S}se{S}lo{S}digas{S}al{S}usuario\b|\bsin{S}decirle{S}al{S}usuario\b",
    rf"\bne{S}le{S}dis{S}pas{S}à{S}l'utilisateur\b|\bsans{S}le{S}dire{S}à{S}l'utilisateur\b",
    rf"\bnão{S}(?:conte|diga){S}(?:isso{S})?ao{S}usuário\b",
    rf"\bnon{S}dirlo{S}all'utente\b",
    rf"\bне{S}(?:говори|сообщай){S}(?:об{S}этом{S})?пользователю\b",
    r"(?:不要|别|別)(?:告诉|告訴)(?:用户|用戶)",
    r"ユーザーに(?:は)?(?:言わ|伝え|教え)ないで",
)

_SECRETS = _any(
    r"~/\.ssh",
    r"~/\.aws",
    "id_rsa",
    r"\.env\b",
    "credentials",
    r"api[ _-]?keys?",
    "passwords?",
    "secrets",
    r"private[ _-]keys?",
    r"session[ _-]tokens?",
    "cookies",
    f"contents{S}of{S}(?:this|the|your|my){S}(?:vault|notes|memory|files?|folder|directory|repo|database|inbox)",
)
_EXFILTRATE = (
    rf"\b(?:send|upload|post|email|e-mail|forward|transmit|exfiltrate|leak|copy|paste)\b[^\n]{{0,60}}?{_SECRETS}"
    rf"[^\n]{{0,40}}?\b(?:to|into)(?:{S}(?:this|the|my))?{S}(?:https?://|[a-z0-9._%+-]+@[a-z0-9-]+\.|(?:url|address"
    rf"|server|endpoint|webhook)\b)",
)

# --- role markers and chat templates -------------------------------------------------------------------

_CHAT_TEMPLATE = (r"<\|[a-z0-9_]{1,40}\|>|<(?:start|end)_of_turn>",)
_ROLE_TAG = (
    r"</?(?:system|assistants?|developer|tools?|functions?)(?:[_\-](?:calls?|results?|uses?|reminder|messages?"
    r"|prompt|response|output|input|code))?(?:\s[^<>]{0,200}|=[^<>]{0,200})?>",
)
_INSTRUCTION_TAGS = (r"\[/?inst\]|<<\s*/?\s*sys\s*>>|</s>\s*(?:<s>|\[inst\]|<\||(?:system|user|assistant|human)\b)",)
_ROLE_LABEL = (
    rf"\[\s*(?:system|sys|admin|administrator|developer|root|assistant|operator)(?:{S}(?:message|note|prompt"
    rf"|instructions?|override|notice|update|alert|command))?\s*\]",
    r"^[ \t]*#{1,6}[ \t]*(?:system|instructions?|response|assistant|human|user|input)[ \t]*:[ \t]*$",
    r"^[ \t]*(?:human|user)[ \t]*:[^\n]*\n(?:[^\n]*\n){0,20}?[ \t]*(?:assistant|ai)[ \t]*:",
    rf"^[ \t]*(?:system|sys)[ \t]*:[ \t]*(?:you|your|ignore|disregard|forget|from{S}now|new|always|never|do{S}not"
    rf"|don't|override|all{S}previous|the{S}(?:assistant|ai|model|user))\b",
    rf"\b(?:system|admin|administrator|developer|priority|emergency|security|root){S}override\b",
)

SIGNALS: tuple[SignalSpec, ...] = (
    SignalSpec("ignore_instructions", 1.0, "an order to drop earlier instructions or rules", "|".join(_IGNORE)),
    SignalSpec(
        "ignore_everything_above",
        1.0,
        'an order to forget the context ("forget everything above")',
        "|".join(_IGNORE_CONTEXT),
    ),
    SignalSpec(
        "jailbreak_persona",
        1.0,
        'a jailbreak persona ("you are now DAN", "you are now unrestricted")',
        "|".join(_JAILBREAK),
    ),
    SignalSpec(
        "system_prompt_exfiltration",
        1.0,
        'a request for the system prompt ("print your system prompt")',
        "|".join(_REVEAL),
    ),
    SignalSpec(
        "repeat_above", 0.75, 'a request to repeat the hidden context ("print the text above")', "|".join(_REPEAT_ABOVE)
    ),
    SignalSpec("new_instructions", 0.5, 'new orders for the model ("new instructions:")', "|".join(_NEW_INSTRUCTIONS)),
    SignalSpec(
        "no_limits", 0.5, 'a claim that the model has no limits ("you have no restrictions")', "|".join(_NO_LIMITS)
    ),
    SignalSpec(
        "addressed_to_ai",
        0.5,
        'text addressed to an AI reader ("note to the AI reading this:")',
        "|".join(_ADDRESSED_TO_AI),
    ),
    SignalSpec(
        "hide_from_user",
        0.5,
        'something to keep from the user ("do not mention this to the user")',
        "|".join(_HIDE_FROM_USER),
    ),
    SignalSpec("exfiltration", 0.5, "an order to send secrets to an address", "|".join(_EXFILTRATE)),
    SignalSpec(
        "chat_template_token",
        0.5,
        "a chat-template control token (<|im_start|>, <start_of_turn>)",
        "|".join(_CHAT_TEMPLATE),
        in_code=0.0,
    ),
    SignalSpec(
        "role_tag", 0.5, "a chat role tag (<system>, </system>, <assistant>, <tool>)", "|".join(_ROLE_TAG), in_code=0.0
    ),
    SignalSpec(
        "instruction_tags",
        0.5,
        "an instruction marker ([INST], <<SYS>>, </s><s>)",
        "|".join(_INSTRUCTION_TAGS),
        in_code=0.0,
    ),
    SignalSpec(
        "role_label",
        0.5,
        'a role label ("[SYSTEM]", "### System:", "Human: ... Assistant:")',
        "|".join(_ROLE_LABEL),
        in_code=0.0,
    ),
)
