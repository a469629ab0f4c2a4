<?xml version="1.0" encoding="utf-8"?>
<!DOCTYPE TS>
<TS version="2.1" language="zh_CN">
<context>
    <name>Answering</name>
    <message>
        <location filename="../ui/answering.py" line="62"/>
        <source>New chat</source>
        <translation>新对话</translation>
    </message>
    <message>
        <location filename="../ui/answering.py" line="152"/>
        <source>The answer failed: %1</source>
        <translation>回答失败：%1</translation>
    </message>
    <message>
        <location filename="../ui/answering.py" line="175"/>
        <source>This chat was changed outside this window while the answer was written: the answer or its chat no longer exists, so the answer was not kept.</source>
        <translation>回答写入期间，此对话在本窗口之外被更改：回答或其对话已不存在，因此未保留该回答。</translation>
    </message>
    <message>
        <location filename="../ui/answering.py" line="195"/>
        <source>Editing an earlier message. Sending starts a new version of the conversation from here; the old version is kept (use ‹ › on the message to switch). Esc cancels.</source>
        <translation>正在编辑之前的消息。发送后将从这里开始对话的新版本；旧版本会保留（用消息上的 ‹ › 切换）。按 Esc 取消。</translation>
    </message>
    <message>
        <location filename="../ui/answering.py" line="212"/>
        <source>Answer copied</source>
        <translation>已复制回答</translation>
    </message>
</context>
<context>
    <name>AttachmentChip</name>
    <message>
        <location filename="../ui/composer.py" line="154"/>
        <source>Attached file</source>
        <translation>附加的文件</translation>
    </message>
    <message>
        <location filename="../ui/composer.py" line="160"/>
        <source>Remove %1</source>
        <translation>移除 %1</translation>
    </message>
    <message>
        <location filename="../ui/composer.py" line="161"/>
        <source>Remove this file from the message</source>
        <translation>从消息中移除这个文件</translation>
    </message>
</context>
<context>
    <name>AutoThreads</name>
    <message>
        <location filename="../ui/thread_sweep.py" line="59"/>
        <source>Measuring the best thread count…</source>
        <translation>正在测量最佳线程数…</translation>
    </message>
    <message>
        <location filename="../ui/thread_sweep.py" line="69"/>
        <source>Measuring the best thread count… %1/%2</source>
        <translation>正在测量最佳线程数… %1/%2</translation>
    </message>
    <message>
        <location filename="../ui/thread_sweep.py" line="99"/>
        <source>Switching to %1…</source>
        <translation>正在切换到 %1…</translation>
    </message>
</context>
<context>
    <name>ChatHeader</name>
    <message>
        <location filename="../ui/header.py" line="47"/>
        <source>Model</source>
        <translation>模型</translation>
    </message>
    <message>
        <location filename="../ui/header.py" line="48"/>
        <source>The model that answers; another one loads in the background</source>
        <translation>回答问题的模型；换一个会在后台加载</translation>
    </message>
    <message>
        <location filename="../ui/header.py" line="53"/>
        <source>Preset</source>
        <translation>预设</translation>
    </message>
    <message>
        <location filename="../ui/header.py" line="58"/>
        <source>System-prompt preset</source>
        <translation>系统提示词预设</translation>
    </message>
    <message>
        <location filename="../ui/header.py" line="67"/>
        <source>Edit your presets</source>
        <translation>编辑你的预设</translation>
    </message>
    <message>
        <location filename="../ui/header.py" line="68"/>
        <source>Add, edit or delete your own presets</source>
        <translation>添加、编辑或删除你自己的预设</translation>
    </message>
    <message>
        <location filename="../ui/header.py" line="81"/>
        <source>No model installed</source>
        <translation>尚未安装模型</translation>
    </message>
    <message>
        <location filename="../ui/header.py" line="102"/>
        <source>This chat&apos;s own prompt</source>
        <translation>本对话自己的提示词</translation>
    </message>
</context>
<context>
    <name>ChatList</name>
    <message>
        <location filename="../ui/sidebar.py" line="307"/>
        <source>%1 matches</source>
        <translation>%1 处匹配</translation>
    </message>
    <message>
        <location filename="../ui/sidebar.py" line="340"/>
        <source>Chat title</source>
        <translation>对话标题</translation>
    </message>
    <message>
        <location filename="../ui/sidebar.py" line="399"/>
        <source>Chat actions</source>
        <translation>对话操作</translation>
    </message>
    <message>
        <location filename="../ui/sidebar.py" line="400"/>
        <source>Rename, pin, export or delete</source>
        <translation>重命名、置顶、导出或删除</translation>
    </message>
</context>
<context>
    <name>ChatView</name>
    <message>
        <location filename="../ui/chat_view.py" line="427"/>
        <source>Conversation</source>
        <translation>对话</translation>
    </message>
</context>
<context>
    <name>ComposerBox</name>
    <message>
        <location filename="../ui/composer.py" line="195"/>
        <source>Attachment problem</source>
        <translation>附件问题</translation>
    </message>
    <message>
        <location filename="../ui/composer.py" line="220"/>
        <location filename="../ui/composer.py" line="296"/>
        <source>Attach a text file</source>
        <translation>附加文本文件</translation>
    </message>
    <message>
        <location filename="../ui/composer.py" line="221"/>
        <source>Attach a text file (or drop one on the message box)</source>
        <translation>附加文本文件（也可以拖到消息框里）</translation>
    </message>
    <message>
        <location filename="../ui/composer.py" line="225"/>
        <source>Message</source>
        <translation>消息</translation>
    </message>
    <message>
        <location filename="../ui/composer.py" line="226"/>
        <source>Ask anything — Enter sends, Shift+Enter adds a line</source>
        <translation>随便问点什么 — Enter 发送，Shift+Enter 换行</translation>
    </message>
    <message>
        <location filename="../ui/composer.py" line="248"/>
        <source>Stop</source>
        <translation>停止</translation>
    </message>
    <message>
        <location filename="../ui/composer.py" line="249"/>
        <source>Stop the answer</source>
        <translation>停止回答</translation>
    </message>
    <message>
        <location filename="../ui/composer.py" line="250"/>
        <source>Stop the answer (Esc)</source>
        <translation>停止回答（Esc）</translation>
    </message>
    <message>
        <location filename="../ui/composer.py" line="252"/>
        <source>Send</source>
        <translation>发送</translation>
    </message>
    <message>
        <location filename="../ui/composer.py" line="253"/>
        <source>Send message</source>
        <translation>发送消息</translation>
    </message>
    <message>
        <location filename="../ui/composer.py" line="254"/>
        <source>Send (Enter)</source>
        <translation>发送（Enter）</translation>
    </message>
    <message>
        <location filename="../ui/composer.py" line="298"/>
        <source>Text files (%1);;All files (*)</source>
        <translation>文本文件 (%1);;所有文件 (*)</translation>
    </message>
    <message>
        <location filename="../ui/composer.py" line="331"/>
        <source>%1 is too large to attach (%2; at most %3).</source>
        <translation>%1 太大，无法附加（%2；最多 %3）。</translation>
    </message>
    <message>
        <location filename="../ui/composer.py" line="332"/>
        <source>%1 is empty: there is nothing to attach.</source>
        <translation>%1 是空的：没有可附加的内容。</translation>
    </message>
    <message>
        <location filename="../ui/composer.py" line="333"/>
        <source>%1 is not a text file (it holds binary data), so it was not attached.</source>
        <translation>%1 不是文本文件（含有二进制数据），未附加。</translation>
    </message>
    <message>
        <location filename="../ui/composer.py" line="334"/>
        <source>%1 is not UTF-8 text, so it was not attached.</source>
        <translation>%1 不是 UTF-8 文本，未附加。</translation>
    </message>
    <message>
        <location filename="../ui/composer.py" line="335"/>
        <source>%1 is a folder: attach the text files in it one by one.</source>
        <translation>%1 是文件夹：请逐个附加其中的文本文件。</translation>
    </message>
    <message>
        <location filename="../ui/composer.py" line="336"/>
        <source>%1 cannot be read: %2</source>
        <translation>无法读取 %1：%2</translation>
    </message>
    <message>
        <location filename="../ui/composer.py" line="337"/>
        <source>%1 is too long for the context (%2 tokens; there is room for %3).</source>
        <translation>%1 太长，上下文放不下（%2 个词元；只剩 %3 的空间）。</translation>
    </message>
    <message>
        <location filename="../ui/composer.py" line="339"/>
        <source>%1 cannot be attached.</source>
        <translation>无法附加 %1。</translation>
    </message>
</context>
<context>
    <name>ContextMeter</name>
    <message>
        <location filename="../ui/context_meter.py" line="22"/>
        <source>Context used</source>
        <translation>已用上下文</translation>
    </message>
    <message>
        <location filename="../ui/context_meter.py" line="31"/>
        <source>context: –</source>
        <translation>上下文：–</translation>
    </message>
    <message>
        <location filename="../ui/context_meter.py" line="38"/>
        <source>%1 / %2 tokens</source>
        <translation>%1 / %2 词元</translation>
    </message>
    <message>
        <location filename="../ui/context_meter.py" line="40"/>
        <source>System prompt: %1 · history and message: %2 · kept for the reply: %3</source>
        <translation>系统提示：%1 · 历史与消息：%2 · 为回答保留：%3</translation>
    </message>
</context>
<context>
    <name>ContextWarning</name>
    <message>
        <location filename="../ui/context_meter.py" line="53"/>
        <source>Context warning</source>
        <translation>上下文警告</translation>
    </message>
    <message>
        <location filename="../ui/context_meter.py" line="62"/>
        <source>Sending this pushes the %1 oldest message(s) out of the context: the model will not see them.</source>
        <translation>发送后，最早的 %1 条消息将被移出上下文，模型将看不到它们。</translation>
    </message>
    <message>
        <location filename="../ui/context_meter.py" line="67"/>
        <source>A message is too long for the context and will be shortened in the middle.</source>
        <translation>有一条消息超出上下文长度，将从中间截短。</translation>
    </message>
</context>
<context>
    <name>Conversations</name>
    <message>
        <location filename="../ui/conversations.py" line="64"/>
        <source>New chat</source>
        <translation>新对话</translation>
    </message>
</context>
<context>
    <name>DownloadDialog</name>
    <message>
        <location filename="../ui/download_dialog.py" line="262"/>
        <location filename="../ui/download_dialog.py" line="338"/>
        <source>Download a model</source>
        <translation>下载模型</translation>
    </message>
    <message>
        <location filename="../ui/download_dialog.py" line="263"/>
        <source>Model download</source>
        <translation>模型下载</translation>
    </message>
    <message>
        <location filename="../ui/download_dialog.py" line="268"/>
        <source>What is being installed</source>
        <translation>正在安装的内容</translation>
    </message>
    <message>
        <location filename="../ui/download_dialog.py" line="272"/>
        <source>Where it comes from</source>
        <translation>来源</translation>
    </message>
    <message>
        <location filename="../ui/download_dialog.py" line="283"/>
        <source>Stage</source>
        <translation>阶段</translation>
    </message>
    <message>
        <location filename="../ui/download_dialog.py" line="278"/>
        <source>Progress</source>
        <translation>进度</translation>
    </message>
    <message>
        <location filename="../ui/download_dialog.py" line="289"/>
        <source>Bytes, speed and time left</source>
        <translation>已下载、速度和剩余时间</translation>
    </message>
    <message>
        <location filename="../ui/download_dialog.py" line="293"/>
        <source>Note</source>
        <translation>说明</translation>
    </message>
    <message>
        <location filename="../ui/download_dialog.py" line="299"/>
        <source>Problem</source>
        <translation>问题</translation>
    </message>
    <message>
        <location filename="../ui/download_dialog.py" line="307"/>
        <source>Import a model from disk instead</source>
        <translation>改为从磁盘导入模型</translation>
    </message>
    <message>
        <location filename="../ui/download_dialog.py" line="311"/>
        <location filename="../ui/download_dialog.py" line="569"/>
        <location filename="../ui/download_dialog.py" line="620"/>
        <source>Resume</source>
        <translation>继续</translation>
    </message>
    <message>
        <location filename="../ui/download_dialog.py" line="312"/>
        <source>Resume or retry the download</source>
        <translation>继续或重试下载</translation>
    </message>
    <message>
        <location filename="../ui/download_dialog.py" line="317"/>
        <source>Use this model</source>
        <translation>使用此模型</translation>
    </message>
    <message>
        <location filename="../ui/download_dialog.py" line="318"/>
        <source>Use this model now</source>
        <translation>立即使用此模型</translation>
    </message>
    <message>
        <location filename="../ui/download_dialog.py" line="322"/>
        <location filename="../ui/download_dialog.py" line="409"/>
        <source>Cancel</source>
        <translation>取消</translation>
    </message>
    <message>
        <location filename="../ui/download_dialog.py" line="323"/>
        <source>Cancel or close</source>
        <translation>取消或关闭</translation>
    </message>
    <message>
        <location filename="../ui/download_dialog.py" line="339"/>
        <source>&lt;b&gt;Downloading %1&lt;/b&gt;</source>
        <translation>&lt;b&gt;正在下载 %1&lt;/b&gt;</translation>
    </message>
    <message>
        <location filename="../ui/download_dialog.py" line="341"/>
        <source>about %1</source>
        <translation>约 %1</translation>
    </message>
    <message>
        <location filename="../ui/download_dialog.py" line="343"/>
        <source>licence %1</source>
        <translation>许可证 %1</translation>
    </message>
    <message>
        <location filename="../ui/download_dialog.py" line="347"/>
        <source>Cancel keeps what has arrived: pressing Download again later continues from there. The file is checked against the hub&apos;s SHA-256 before it is used.</source>
        <translation>取消会保留已下载的部分：之后再次点击“下载”会从那里继续。文件在使用前会与模型库提供的 SHA-256 校验。</translation>
    </message>
    <message>
        <location filename="../ui/download_dialog.py" line="352"/>
        <source>Connecting to the Hugging Face hub…</source>
        <translation>正在连接 Hugging Face 模型库…</translation>
    </message>
    <message>
        <location filename="../ui/download_dialog.py" line="359"/>
        <source>Import a model</source>
        <translation>导入模型</translation>
    </message>
    <message>
        <location filename="../ui/download_dialog.py" line="360"/>
        <source>&lt;b&gt;Importing %1&lt;/b&gt;</source>
        <translation>&lt;b&gt;正在导入 %1&lt;/b&gt;</translation>
    </message>
    <message>
        <location filename="../ui/download_dialog.py" line="373"/>
        <source>Reading…</source>
        <translation>正在读取…</translation>
    </message>
    <message>
        <location filename="../ui/download_dialog.py" line="421"/>
        <source>%1 of %2</source>
        <translation>%1 / %2</translation>
    </message>
    <message>
        <location filename="../ui/download_dialog.py" line="429"/>
        <source>%1/s</source>
        <translation>%1/秒</translation>
    </message>
    <message>
        <location filename="../ui/download_dialog.py" line="529"/>
        <source>Close</source>
        <translation>关闭</translation>
    </message>
    <message>
        <location filename="../ui/download_dialog.py" line="552"/>
        <source>Installed</source>
        <translation>已安装</translation>
    </message>
    <message>
        <location filename="../ui/download_dialog.py" line="540"/>
        <source>%1 · %2 on disk · in %3</source>
        <translation>%1 · 占用 %2 · 位于 %3</translation>
    </message>
    <message>
        <location filename="../ui/download_dialog.py" line="286"/>
        <source>Time taken and time left</source>
        <translation>已用时间和剩余时间</translation>
    </message>
    <message>
        <location filename="../ui/download_dialog.py" line="367"/>
        <source>The file is prepared once for this app; that takes about %1 min on a 2-core laptop (less on a faster computer). Cancel stops it and leaves nothing behind.</source>
        <translation>文件只需为本应用准备一次；在双核笔记本电脑上大约需要 %1 分钟（更快的电脑用时更短）。“取消”会停止并且不留下任何内容。</translation>
    </message>
    <message>
        <location filename="../ui/download_dialog.py" line="372"/>
        <source>The model is copied into the models folder.</source>
        <translation>模型将被复制到模型文件夹。</translation>
    </message>
    <message>
        <location filename="../ui/download_dialog.py" line="449"/>
        <source>Downloading the model</source>
        <translation>正在下载模型</translation>
    </message>
    <message>
        <location filename="../ui/download_dialog.py" line="450"/>
        <source>Reading the file</source>
        <translation>正在读取文件</translation>
    </message>
    <message>
        <location filename="../ui/download_dialog.py" line="451"/>
        <source>Trying the model on a sample text</source>
        <translation>正在用示例文本试运行模型</translation>
    </message>
    <message>
        <location filename="../ui/download_dialog.py" line="452"/>
        <source>Making the model smaller so it runs fast</source>
        <translation>正在缩小模型，让它运行得更快</translation>
    </message>
    <message>
        <location filename="../ui/download_dialog.py" line="453"/>
        <location filename="../ui/download_dialog.py" line="455"/>
        <source>Saving</source>
        <translation>正在保存</translation>
    </message>
    <message>
        <location filename="../ui/download_dialog.py" line="454"/>
        <source>Preparing quick reading of long messages</source>
        <translation>正在准备快速读取长消息</translation>
    </message>
    <message>
        <location filename="../ui/download_dialog.py" line="456"/>
        <source>Finishing the model</source>
        <translation>正在完成模型</translation>
    </message>
    <message>
        <location filename="../ui/download_dialog.py" line="457"/>
        <source>Checking the files</source>
        <translation>正在检查文件</translation>
    </message>
    <message>
        <location filename="../ui/download_dialog.py" line="458"/>
        <source>Copying the model</source>
        <translation>正在复制模型</translation>
    </message>
    <message>
        <location filename="../ui/download_dialog.py" line="459"/>
        <source>Starting the model</source>
        <translation>正在启动模型</translation>
    </message>
    <message>
        <location filename="../ui/download_dialog.py" line="471"/>
        <source>%1 so far</source>
        <translation>已用 %1</translation>
    </message>
    <message>
        <location filename="../ui/download_dialog.py" line="475"/>
        <source>working out the time left…</source>
        <translation>正在估算剩余时间…</translation>
    </message>
    <message>
        <location filename="../ui/download_dialog.py" line="431"/>
        <location filename="../ui/download_dialog.py" line="480"/>
        <source>about %1 left</source>
        <translation>约剩 %1</translation>
    </message>
    <message>
        <location filename="../ui/download_dialog.py" line="306"/>
        <source>Use a model file you already have…</source>
        <translation>使用已有的模型文件…</translation>
    </message>
    <message>
        <location filename="../ui/download_dialog.py" line="473"/>
        <source>Done in %1</source>
        <translation>用时 %1，已完成</translation>
    </message>
    <message>
        <location filename="../ui/download_dialog.py" line="478"/>
        <source>about %1 left in all</source>
        <translation>全部完成约剩 %1</translation>
    </message>
    <message>
        <location filename="../ui/download_dialog.py" line="498"/>
        <source>Installed. Switching to it as soon as the answer being written is done…</source>
        <translation>已安装。正在生成的回答完成后即切换到它…</translation>
    </message>
    <message>
        <location filename="../ui/download_dialog.py" line="508"/>
        <source>Ready: the app now uses %1.</source>
        <translation>就绪：应用现在使用 %1。</translation>
    </message>
    <message>
        <location filename="../ui/download_dialog.py" line="518"/>
        <source>Installed, but it could not be started</source>
        <translation>已安装，但无法启动</translation>
    </message>
    <message>
        <location filename="../ui/download_dialog.py" line="548"/>
        <source>The model is installed; the app switches to it by itself.</source>
        <translation>模型已安装，应用会自动切换到它。</translation>
    </message>
    <message>
        <location filename="../ui/download_dialog.py" line="553"/>
        <source>The model is ready. It is listed among the installed models.</source>
        <translation>模型已就绪，已列在已安装的模型中。</translation>
    </message>
    <message>
        <location filename="../ui/download_dialog.py" line="560"/>
        <source>Paused</source>
        <translation>已暂停</translation>
    </message>
    <message>
        <location filename="../ui/download_dialog.py" line="565"/>
        <source>What has arrived is kept in the models folder; Resume (or Download later) continues from there.</source>
        <translation>已下载的部分保留在模型文件夹中；点击“继续”（或之后再下载）会从那里继续。</translation>
    </message>
    <message>
        <location filename="../ui/download_dialog.py" line="572"/>
        <source>The import was cancelled; nothing was installed.</source>
        <translation>导入已取消，未安装任何内容。</translation>
    </message>
    <message>
        <location filename="../ui/download_dialog.py" line="576"/>
        <source>Stopped while building. The downloaded file is kept: Resume only builds it.</source>
        <translation>在构建时停止。已下载的文件会保留：“继续”只需重新构建。</translation>
    </message>
    <message>
        <location filename="../ui/download_dialog.py" line="580"/>
        <source>Paused at %1 of %2.</source>
        <translation>暂停于 %1 / %2。</translation>
    </message>
    <message>
        <location filename="../ui/download_dialog.py" line="585"/>
        <source>Stopped.</source>
        <translation>已停止。</translation>
    </message>
    <message>
        <location filename="../ui/download_dialog.py" line="592"/>
        <source>The Hugging Face hub cannot be reached.</source>
        <translation>无法连接 Hugging Face 模型库。</translation>
    </message>
    <message>
        <location filename="../ui/download_dialog.py" line="593"/>
        <source>This model was not found on the hub.</source>
        <translation>模型库中找不到此模型。</translation>
    </message>
    <message>
        <location filename="../ui/download_dialog.py" line="594"/>
        <source>This model needs a Hugging Face login.</source>
        <translation>此模型需要登录 Hugging Face。</translation>
    </message>
    <message>
        <location filename="../ui/download_dialog.py" line="595"/>
        <source>The download arrived damaged and was deleted; nothing was installed.</source>
        <translation>下载的文件已损坏并被删除，未安装任何内容。</translation>
    </message>
    <message>
        <location filename="../ui/download_dialog.py" line="596"/>
        <source>Not enough disk space.</source>
        <translation>磁盘空间不足。</translation>
    </message>
    <message>
        <location filename="../ui/download_dialog.py" line="597"/>
        <source>The hub keeps answering with an error.</source>
        <translation>模型库持续返回错误。</translation>
    </message>
    <message>
        <location filename="../ui/download_dialog.py" line="598"/>
        <source>The connection keeps dropping; what arrived is kept.</source>
        <translation>连接不断中断；已下载的部分会保留。</translation>
    </message>
    <message>
        <location filename="../ui/download_dialog.py" line="600"/>
        <source>The model could not be installed.</source>
        <translation>无法安装模型。</translation>
    </message>
    <message>
        <location filename="../ui/download_dialog.py" line="606"/>
        <source>Failed</source>
        <translation>失败</translation>
    </message>
    <message>
        <location filename="../ui/download_dialog.py" line="609"/>
        <source>What has arrived is kept; Resume continues from there.</source>
        <translation>已下载的部分会保留；“继续”会从那里继续。</translation>
    </message>
    <message>
        <location filename="../ui/download_dialog.py" line="620"/>
        <source>Try again</source>
        <translation>重试</translation>
    </message>
    <message>
        <location filename="../ui/download_dialog.py" line="629"/>
        <source>No connection to %1 — check the network, or use a model file you already have.</source>
        <translation>无法连接到 %1 —— 请检查网络，或使用已有的模型文件。</translation>
    </message>
    <message>
        <location filename="../ui/download_dialog.py" line="646"/>
        <source>Stopping…</source>
        <translation>正在停止…</translation>
    </message>
</context>
<context>
    <name>FirstRunPage</name>
    <message>
        <location filename="../ui/first_run.py" line="94"/>
        <location filename="../ui/first_run.py" line="108"/>
        <source>Choose a model</source>
        <translation>选择模型</translation>
    </message>
    <message>
        <location filename="../ui/first_run.py" line="107"/>
        <source>&lt;h2&gt;Choose a model&lt;/h2&gt;</source>
        <translation>&lt;h2&gt;选择模型&lt;/h2&gt;</translation>
    </message>
    <message>
        <location filename="../ui/first_run.py" line="112"/>
        <source>Qwen Desktop answers with a model that runs on this computer: what you type never leaves it. Pick one to start.</source>
        <translation>Qwen 桌面版使用在这台电脑上运行的模型来回答：你输入的内容不会离开这台电脑。请选择一个开始。</translation>
    </message>
    <message>
        <location filename="../ui/first_run.py" line="117"/>
        <source>About this page</source>
        <translation>关于此页</translation>
    </message>
    <message>
        <location filename="../ui/first_run.py" line="122"/>
        <source>What went wrong</source>
        <translation>出了什么问题</translation>
    </message>
    <message>
        <location filename="../ui/first_run.py" line="128"/>
        <source>Use the model included with the app</source>
        <translation>使用随应用附带的模型</translation>
    </message>
    <message>
        <location filename="../ui/first_run.py" line="135"/>
        <source>Download a model</source>
        <translation>下载模型</translation>
    </message>
    <message>
        <location filename="../ui/first_run.py" line="142"/>
        <source>Use a model file you already have…</source>
        <translation>使用已有的模型文件…</translation>
    </message>
    <message>
        <location filename="../ui/first_run.py" line="144"/>
        <source>For example one you downloaded for LM Studio or Ollama. It is prepared once for this app; the file itself is left as it is.</source>
        <translation>例如你为 LM Studio 或 Ollama 下载的文件。它会为本应用准备一次；文件本身保持不变。</translation>
    </message>
    <message>
        <location filename="../ui/first_run.py" line="148"/>
        <source>Choose a model file on this computer</source>
        <translation>选择这台电脑上的模型文件</translation>
    </message>
    <message>
        <location filename="../ui/first_run.py" line="153"/>
        <source>Choose a folder instead…</source>
        <translation>改为选择文件夹…</translation>
    </message>
    <message>
        <location filename="../ui/first_run.py" line="154"/>
        <source>Choose a model folder on this computer</source>
        <translation>选择这台电脑上的模型文件夹</translation>
    </message>
    <message>
        <location filename="../ui/first_run.py" line="159"/>
        <source>More models…</source>
        <translation>更多模型…</translation>
    </message>
    <message>
        <location filename="../ui/first_run.py" line="160"/>
        <source>Show all the models you can download</source>
        <translation>显示所有可下载的模型</translation>
    </message>
    <message>
        <location filename="../ui/first_run.py" line="167"/>
        <source>Or drop a model file or folder anywhere on this window.</source>
        <translation>也可以把模型文件或文件夹拖放到此窗口的任意位置。</translation>
    </message>
    <message>
        <location filename="../ui/first_run.py" line="168"/>
        <source>Drop a model here</source>
        <translation>把模型拖放到这里</translation>
    </message>
    <message>
        <location filename="../ui/first_run.py" line="189"/>
        <source>Start with %1</source>
        <translation>使用 %1 开始</translation>
    </message>
    <message>
        <location filename="../ui/first_run.py" line="191"/>
        <source>Included with the app, ready at once (%1 on disk).</source>
        <translation>随应用附带，立即可用（占用 %1）。</translation>
    </message>
    <message>
        <location filename="../ui/first_run.py" line="197"/>
        <source>Download %1</source>
        <translation>下载 %1</translation>
    </message>
    <message>
        <location filename="../ui/first_run.py" line="198"/>
        <source>a few hundred MB</source>
        <translation>几百 MB</translation>
    </message>
    <message>
        <location filename="../ui/first_run.py" line="201"/>
        <source>Downloads %1, then takes about %2 min to get ready on a 2-core laptop. Only this step uses the internet.</source>
        <translation>下载 %1，然后在双核笔记本电脑上大约需要 %2 分钟准备。只有这一步会用到网络。</translation>
    </message>
    <message>
        <location filename="../ui/first_run.py" line="227"/>
        <source>Choose a model file</source>
        <translation>选择模型文件</translation>
    </message>
    <message>
        <location filename="../ui/first_run.py" line="229"/>
        <source>Model files (*.gguf);;All files (*)</source>
        <translation>模型文件 (*.gguf);;所有文件 (*)</translation>
    </message>
    <message>
        <location filename="../ui/first_run.py" line="236"/>
        <source>Choose a model folder</source>
        <translation>选择模型文件夹</translation>
    </message>
</context>
<context>
    <name>LocalServerSwitch</name>
    <message>
        <location filename="../ui/local_server.py" line="31"/>
        <source>The local server could not start on port %1: %2</source>
        <translation>本地服务器无法在端口 %1 上启动：%2</translation>
    </message>
    <message>
        <location filename="../ui/local_server.py" line="46"/>
        <source>Waiting for an API request to finish…</source>
        <translation>正在等待 API 请求完成…</translation>
    </message>
</context>
<context>
    <name>MainWindow</name>
    <message>
        <location filename="../ui/main_window.py" line="123"/>
        <source>Qwen Desktop</source>
        <translation>Qwen 桌面版</translation>
    </message>
    <message>
        <location filename="../ui/main_window.py" line="264"/>
        <source>New chat</source>
        <translation>新对话</translation>
    </message>
    <message>
        <location filename="../ui/main_window.py" line="267"/>
        <source>Settings</source>
        <translation>设置</translation>
    </message>
    <message>
        <location filename="../ui/main_window.py" line="199"/>
        <source>Editing notice</source>
        <translation>编辑提示</translation>
    </message>
    <message>
        <location filename="../ui/main_window.py" line="266"/>
        <source>Stop</source>
        <translation>停止</translation>
    </message>
    <message>
        <location filename="../ui/main_window.py" line="91"/>
        <source>Chats cannot be saved this time: %1</source>
        <translation>本次无法保存对话：%1</translation>
    </message>
    <message>
        <location filename="../ui/main_window.py" line="265"/>
        <source>Focus the message box</source>
        <translation>转到输入框</translation>
    </message>
    <message>
        <location filename="../ui/main_window.py" line="268"/>
        <source>Copy the last answer</source>
        <translation>复制最后一条回答</translation>
    </message>
    <message>
        <location filename="../ui/main_window.py" line="353"/>
        <source>Applying settings…</source>
        <translation>正在应用设置…</translation>
    </message>
</context>
<context>
    <name>MessageView</name>
    <message>
        <location filename="../ui/chat_view.py" line="205"/>
        <source>You</source>
        <translation>你</translation>
    </message>
    <message>
        <location filename="../ui/chat_view.py" line="205"/>
        <source>Assistant</source>
        <translation>助手</translation>
    </message>
    <message>
        <location filename="../ui/chat_view.py" line="207"/>
        <source>Author</source>
        <translation>作者</translation>
    </message>
    <message>
        <location filename="../ui/chat_view.py" line="230"/>
        <source>Previous version</source>
        <translation>上一个版本</translation>
    </message>
    <message>
        <location filename="../ui/chat_view.py" line="235"/>
        <source>Version</source>
        <translation>版本</translation>
    </message>
    <message>
        <location filename="../ui/chat_view.py" line="236"/>
        <source>Next version</source>
        <translation>下一个版本</translation>
    </message>
    <message>
        <location filename="../ui/chat_view.py" line="213"/>
        <source>edited</source>
        <translation>已编辑</translation>
    </message>
    <message>
        <location filename="../ui/chat_view.py" line="215"/>
        <source>Edited</source>
        <translation>已编辑</translation>
    </message>
    <message>
        <location filename="../ui/chat_view.py" line="216"/>
        <source>You edited this message; ‹ shows the earlier version</source>
        <translation>你编辑过这条消息；‹ 显示之前的版本</translation>
    </message>
    <message>
        <location filename="../ui/chat_view.py" line="219"/>
        <source>Message status</source>
        <translation>消息状态</translation>
    </message>
    <message>
        <location filename="../ui/chat_view.py" line="242"/>
        <source>Copy</source>
        <translation>复制</translation>
    </message>
    <message>
        <location filename="../ui/chat_view.py" line="242"/>
        <source>Copy message</source>
        <translation>复制消息</translation>
    </message>
    <message>
        <location filename="../ui/chat_view.py" line="248"/>
        <source>Edit</source>
        <translation>编辑</translation>
    </message>
    <message>
        <location filename="../ui/chat_view.py" line="248"/>
        <source>Edit and resend</source>
        <translation>编辑并重新发送</translation>
    </message>
    <message>
        <location filename="../ui/chat_view.py" line="253"/>
        <source>Retry</source>
        <translation>重试</translation>
    </message>
    <message>
        <location filename="../ui/chat_view.py" line="253"/>
        <source>Regenerate</source>
        <translation>重新生成</translation>
    </message>
    <message>
        <location filename="../ui/chat_view.py" line="273"/>
        <source>Message text</source>
        <translation>消息内容</translation>
    </message>
    <message>
        <location filename="../ui/chat_view.py" line="281"/>
        <source>Answer figures</source>
        <translation>回答的数据</translation>
    </message>
    <message>
        <location filename="../ui/chat_view.py" line="297"/>
        <source>%1 s to first word · %2 tokens/s</source>
        <translation>首词 %1 秒 · 每秒 %2 个词元</translation>
    </message>
    <message>
        <location filename="../ui/chat_view.py" line="305"/>
        <source>Model: %1</source>
        <translation>模型：%1</translation>
    </message>
    <message>
        <location filename="../ui/chat_view.py" line="307"/>
        <source>Prompt: %1 tokens (%2 already read), read at %3 tokens/s</source>
        <translation>提示：%1 个词元（%2 个已预先读取），读取速度每秒 %3 个词元</translation>
    </message>
    <message>
        <location filename="../ui/chat_view.py" line="313"/>
        <source>Answer: %1 tokens at %2 tokens/s, %3 s in all</source>
        <translation>回答：%1 个词元，每秒 %2 个，共 %3 秒</translation>
    </message>
    <message>
        <location filename="../ui/chat_view.py" line="359"/>
        <source>writing…</source>
        <translation>正在生成…</translation>
    </message>
    <message>
        <location filename="../ui/chat_view.py" line="360"/>
        <source>stopped</source>
        <translation>已停止</translation>
    </message>
    <message>
        <location filename="../ui/chat_view.py" line="361"/>
        <source>interrupted (the app closed while writing)</source>
        <translation>已中断（生成时应用被关闭）</translation>
    </message>
    <message>
        <location filename="../ui/chat_view.py" line="362"/>
        <source>failed</source>
        <translation>失败</translation>
    </message>
    <message>
        <location filename="../ui/chat_view.py" line="380"/>
        <source>Copy code</source>
        <translation>复制代码</translation>
    </message>
    <message>
        <location filename="../ui/chat_view.py" line="382"/>
        <source>Shown as plain text: {reason}.</source>
        <translation>以纯文本显示：{reason}。</translation>
    </message>
</context>
<context>
    <name>ModelInstalling</name>
    <message>
        <location filename="../ui/model_install.py" line="115"/>
        <source>%1 is installed; the app switches to it when this answer is done.</source>
        <translation>%1 已安装；此回答完成后应用会切换到它。</translation>
    </message>
    <message>
        <location filename="../ui/model_install.py" line="135"/>
        <source>Now using %1, the model just installed.</source>
        <translation>现在使用刚安装的模型 %1。</translation>
    </message>
</context>
<context>
    <name>ModelLoading</name>
    <message>
        <location filename="../ui/model_loading.py" line="40"/>
        <source>No model yet</source>
        <translation>尚无模型</translation>
    </message>
    <message>
        <location filename="../ui/model_loading.py" line="52"/>
        <location filename="../ui/model_loading.py" line="61"/>
        <source>Loading model…</source>
        <translation>正在加载模型…</translation>
    </message>
    <message>
        <location filename="../ui/model_loading.py" line="60"/>
        <source>Reading model folder…</source>
        <translation>正在读取模型文件夹…</translation>
    </message>
    <message>
        <location filename="../ui/model_loading.py" line="62"/>
        <source>Warming up…</source>
        <translation>正在预热…</translation>
    </message>
    <message>
        <location filename="../ui/model_loading.py" line="86"/>
        <source>Now using %1.</source>
        <translation>现在使用 %1。</translation>
    </message>
    <message>
        <location filename="../ui/model_loading.py" line="102"/>
        <source>The model could not be loaded: %1</source>
        <translation>无法加载模型：%1</translation>
    </message>
    <message>
        <location filename="../ui/model_loading.py" line="103"/>
        <source>No model loaded</source>
        <translation>未加载模型</translation>
    </message>
    <message>
        <location filename="../ui/model_loading.py" line="124"/>
        <source>Switching to %1 when this answer is done.</source>
        <translation>这个回答结束后切换到 %1。</translation>
    </message>
    <message>
        <location filename="../ui/model_loading.py" line="136"/>
        <source>Loading %1… — your chat stays</source>
        <translation>正在加载 %1… — 对话会保留</translation>
    </message>
</context>
<context>
    <name>ModelsDialog</name>
    <message>
        <location filename="../ui/models_dialog.py" line="138"/>
        <location filename="../ui/models_dialog.py" line="139"/>
        <source>Models</source>
        <translation>模型</translation>
    </message>
    <message>
        <location filename="../ui/models_dialog.py" line="146"/>
        <source>Models folder:</source>
        <translation>模型文件夹：</translation>
    </message>
    <message>
        <location filename="../ui/models_dialog.py" line="148"/>
        <source>Models folder</source>
        <translation>模型文件夹</translation>
    </message>
    <message>
        <location filename="../ui/models_dialog.py" line="151"/>
        <source>Open folder</source>
        <translation>打开文件夹</translation>
    </message>
    <message>
        <location filename="../ui/models_dialog.py" line="152"/>
        <source>Open the models folder</source>
        <translation>打开模型文件夹</translation>
    </message>
    <message>
        <location filename="../ui/models_dialog.py" line="155"/>
        <source>Change folder…</source>
        <translation>更改文件夹…</translation>
    </message>
    <message>
        <location filename="../ui/models_dialog.py" line="156"/>
        <source>Change where models are stored</source>
        <translation>更改模型的存储位置</translation>
    </message>
    <message>
        <location filename="../ui/models_dialog.py" line="161"/>
        <source>Free disk space</source>
        <translation>可用磁盘空间</translation>
    </message>
    <message>
        <location filename="../ui/models_dialog.py" line="165"/>
        <location filename="../ui/models_dialog.py" line="366"/>
        <source>Installed</source>
        <translation>已安装</translation>
    </message>
    <message>
        <location filename="../ui/models_dialog.py" line="169"/>
        <source>Default</source>
        <translation>默认</translation>
    </message>
    <message>
        <location filename="../ui/models_dialog.py" line="170"/>
        <location filename="../ui/models_dialog.py" line="210"/>
        <source>Name</source>
        <translation>名称</translation>
    </message>
    <message>
        <location filename="../ui/models_dialog.py" line="171"/>
        <source>Precision</source>
        <translation>精度</translation>
    </message>
    <message>
        <location filename="../ui/models_dialog.py" line="172"/>
        <source>Size on disk</source>
        <translation>占用空间</translation>
    </message>
    <message>
        <location filename="../ui/models_dialog.py" line="173"/>
        <source>Source</source>
        <translation>来源</translation>
    </message>
    <message>
        <location filename="../ui/models_dialog.py" line="174"/>
        <source>Checksum</source>
        <translation>校验和</translation>
    </message>
    <message>
        <location filename="../ui/models_dialog.py" line="176"/>
        <source>Installed models</source>
        <translation>已安装的模型</translation>
    </message>
    <message>
        <location filename="../ui/models_dialog.py" line="183"/>
        <source>No model is installed yet: download one below, or import a file you already have.</source>
        <translation>尚未安装模型：请在下方下载，或导入已有的文件。</translation>
    </message>
    <message>
        <location filename="../ui/models_dialog.py" line="185"/>
        <source>No models yet</source>
        <translation>尚无模型</translation>
    </message>
    <message>
        <location filename="../ui/models_dialog.py" line="188"/>
        <source>Set as default</source>
        <translation>设为默认</translation>
    </message>
    <message>
        <location filename="../ui/models_dialog.py" line="189"/>
        <source>Make the selected model the default</source>
        <translation>将所选模型设为默认</translation>
    </message>
    <message>
        <location filename="../ui/models_dialog.py" line="192"/>
        <source>Delete…</source>
        <translation>删除…</translation>
    </message>
    <message>
        <location filename="../ui/models_dialog.py" line="193"/>
        <source>Delete the selected model</source>
        <translation>删除所选模型</translation>
    </message>
    <message>
        <location filename="../ui/models_dialog.py" line="197"/>
        <source>Import from disk…</source>
        <translation>从磁盘导入…</translation>
    </message>
    <message>
        <location filename="../ui/models_dialog.py" line="198"/>
        <source>Import a model from disk</source>
        <translation>从磁盘导入模型</translation>
    </message>
    <message>
        <location filename="../ui/models_dialog.py" line="200"/>
        <source>GGUF file…</source>
        <translation>GGUF 文件…</translation>
    </message>
    <message>
        <location filename="../ui/models_dialog.py" line="201"/>
        <source>Hugging Face folder or model folder…</source>
        <translation>Hugging Face 文件夹或模型文件夹…</translation>
    </message>
    <message>
        <location filename="../ui/models_dialog.py" line="207"/>
        <source>Available to download</source>
        <translation>可下载</translation>
    </message>
    <message>
        <location filename="../ui/models_dialog.py" line="210"/>
        <source>About</source>
        <translation>简介</translation>
    </message>
    <message>
        <location filename="../ui/models_dialog.py" line="210"/>
        <location filename="../ui/models_dialog.py" line="373"/>
        <source>Download</source>
        <translation>下载</translation>
    </message>
    <message>
        <location filename="../ui/models_dialog.py" line="210"/>
        <source>Licence</source>
        <translation>许可证</translation>
    </message>
    <message>
        <location filename="../ui/models_dialog.py" line="211"/>
        <source>Models available to download</source>
        <translation>可下载的模型</translation>
    </message>
    <message>
        <location filename="../ui/models_dialog.py" line="220"/>
        <source>From the Hugging Face hub; nothing is fetched until you press Download. Each file is checked against the hub&apos;s SHA-256, then converted into a model folder here.</source>
        <translation>来自 Hugging Face 模型库；在点击“下载”之前不会获取任何内容。每个文件都会与模型库的 SHA-256 校验，然后在本机转换为模型文件夹。</translation>
    </message>
    <message>
        <location filename="../ui/models_dialog.py" line="226"/>
        <source>About downloads</source>
        <translation>关于下载</translation>
    </message>
    <message>
        <location filename="../ui/models_dialog.py" line="231"/>
        <source>Status</source>
        <translation>状态</translation>
    </message>
    <message>
        <location filename="../ui/models_dialog.py" line="237"/>
        <source>Close</source>
        <translation>关闭</translation>
    </message>
    <message>
        <location filename="../ui/models_dialog.py" line="246"/>
        <source>The catalogue cannot be read: %1</source>
        <translation>无法读取模型目录：%1</translation>
    </message>
    <message>
        <location filename="../ui/models_dialog.py" line="254"/>
        <source>Select all</source>
        <translation>全选</translation>
    </message>
    <message>
        <location filename="../ui/models_dialog.py" line="284"/>
        <source>%1 free on this disk</source>
        <translation>此磁盘可用 %1</translation>
    </message>
    <message>
        <location filename="../ui/models_dialog.py" line="292"/>
        <source>The models folder cannot be read: %1</source>
        <translation>无法读取模型文件夹：%1</translation>
    </message>
    <message>
        <location filename="../ui/models_dialog.py" line="304"/>
        <source>(in use)</source>
        <translation>（使用中）</translation>
    </message>
    <message>
        <location filename="../ui/models_dialog.py" line="306"/>
        <source>(broken: delete it or import it again)</source>
        <translation>（已损坏：请删除或重新导入）</translation>
    </message>
    <message>
        <location filename="../ui/models_dialog.py" line="310"/>
        <source>Included with the app</source>
        <translation>随应用附带</translation>
    </message>
    <message>
        <location filename="../ui/models_dialog.py" line="312"/>
        <source>Included with the app, in %1 (read-only: it cannot be deleted)</source>
        <translation>随应用附带，位于 %1（只读：不能删除）</translation>
    </message>
    <message>
        <location filename="../ui/models_dialog.py" line="315"/>
        <source>The default: opened when the app starts</source>
        <translation>默认：应用启动时打开</translation>
    </message>
    <message>
        <location filename="../ui/models_dialog.py" line="345"/>
        <source>imported from %1</source>
        <translation>从 %1 导入</translation>
    </message>
    <message>
        <location filename="../ui/models_dialog.py" line="348"/>
        <source>unknown (a folder found without an install record)</source>
        <translation>来源不明（该文件夹没有安装记录）</translation>
    </message>
    <message>
        <location filename="../ui/models_dialog.py" line="371"/>
        <source>Resume (%1 kept)</source>
        <translation>继续（已保留 %1）</translation>
    </message>
    <message>
        <location filename="../ui/models_dialog.py" line="376"/>
        <source>Download %1</source>
        <translation>下载 %1</translation>
    </message>
    <message>
        <location filename="../ui/models_dialog.py" line="415"/>
        <source>Included with the app: it is read-only and cannot be deleted</source>
        <translation>随应用附带：只读，不能删除</translation>
    </message>
    <message>
        <location filename="../ui/models_dialog.py" line="437"/>
        <source>%1 is now the default; the app switches to it when this window closes.</source>
        <translation>%1 现在是默认模型；关闭此窗口后应用将切换到它。</translation>
    </message>
    <message>
        <location filename="../ui/models_dialog.py" line="452"/>
        <source>Model in use</source>
        <translation>使用中的模型</translation>
    </message>
    <message>
        <location filename="../ui/models_dialog.py" line="454"/>
        <source>%1 is the model in use, so it is not deleted. Make another model the default (Set as default), close this window so the app switches to it, then delete this one.</source>
        <translation>%1 是正在使用的模型，因此不会被删除。请先将另一个模型设为默认（“设为默认”），关闭此窗口让应用切换过去，再删除此模型。</translation>
    </message>
    <message>
        <location filename="../ui/models_dialog.py" line="464"/>
        <source>Delete model</source>
        <translation>删除模型</translation>
    </message>
    <message>
        <location filename="../ui/models_dialog.py" line="466"/>
        <source>Delete %1? Its folder (%2, %3) is removed from disk. It can be downloaded or imported again.</source>
        <translation>删除 %1？其文件夹（%2，%3）将从磁盘中移除。之后可以重新下载或导入。</translation>
    </message>
    <message>
        <location filename="../ui/models_dialog.py" line="484"/>
        <source>Deleted %1.</source>
        <translation>已删除 %1。</translation>
    </message>
    <message>
        <location filename="../ui/models_dialog.py" line="495"/>
        <source>Where to store models</source>
        <translation>模型存储位置</translation>
    </message>
    <message>
        <location filename="../ui/models_dialog.py" line="507"/>
        <source>Models are now stored in %1. The models in %2 stay there (move them by hand if you like).</source>
        <translation>模型现在存储在 %1。%2 中的模型会留在原处（如需要可手动移动）。</translation>
    </message>
    <message>
        <location filename="../ui/models_dialog.py" line="513"/>
        <source>The setting could not be saved: %1</source>
        <translation>无法保存设置：%1</translation>
    </message>
    <message>
        <location filename="../ui/models_dialog.py" line="563"/>
        <source>Import a GGUF file</source>
        <translation>导入 GGUF 文件</translation>
    </message>
    <message>
        <location filename="../ui/models_dialog.py" line="563"/>
        <source>GGUF models (*.gguf)</source>
        <translation>GGUF 模型 (*.gguf)</translation>
    </message>
    <message>
        <location filename="../ui/models_dialog.py" line="570"/>
        <source>Import a model folder</source>
        <translation>导入模型文件夹</translation>
    </message>
    <message>
        <location filename="../ui/models_dialog.py" line="575"/>
        <source>Installed %1.</source>
        <translation>已安装 %1。</translation>
    </message>
</context>
<context>
    <name>PresetsDialog</name>
    <message>
        <location filename="../ui/presets.py" line="169"/>
        <location filename="../ui/presets.py" line="185"/>
        <source>Your presets</source>
        <translation>你的预设</translation>
    </message>
    <message>
        <location filename="../ui/presets.py" line="176"/>
        <source>A preset is the system prompt a chat starts with: what the model is told before your first message. Choose one for each chat at the top of the window.</source>
        <translation>预设就是对话使用的系统提示词：在你的第一条消息之前告诉模型的话。可以在窗口顶部为每个对话选择一个。</translation>
    </message>
    <message>
        <location filename="../ui/presets.py" line="189"/>
        <location filename="../ui/presets.py" line="190"/>
        <source>New preset</source>
        <translation>新建预设</translation>
    </message>
    <message>
        <location filename="../ui/presets.py" line="192"/>
        <source>Delete</source>
        <translation>删除</translation>
    </message>
    <message>
        <location filename="../ui/presets.py" line="193"/>
        <source>Delete the preset</source>
        <translation>删除这个预设</translation>
    </message>
    <message>
        <location filename="../ui/presets.py" line="201"/>
        <source>Preset name</source>
        <translation>预设名称</translation>
    </message>
    <message>
        <location filename="../ui/presets.py" line="204"/>
        <source>Name:</source>
        <translation>名称：</translation>
    </message>
    <message>
        <location filename="../ui/presets.py" line="206"/>
        <source>Preset system prompt</source>
        <translation>预设的系统提示词</translation>
    </message>
    <message>
        <location filename="../ui/presets.py" line="207"/>
        <source>You are …</source>
        <translation>你是……</translation>
    </message>
    <message>
        <location filename="../ui/presets.py" line="209"/>
        <source>System prompt:</source>
        <translation>系统提示词：</translation>
    </message>
    <message>
        <location filename="../ui/presets.py" line="252"/>
        <source>(no name)</source>
        <translation>（无名称）</translation>
    </message>
    <message>
        <location filename="../ui/presets.py" line="258"/>
        <location filename="../ui/presets.py" line="273"/>
        <source>My preset</source>
        <translation>我的预设</translation>
    </message>
</context>
<context>
    <name>ProblemBanner</name>
    <message>
        <location filename="../ui/banner.py" line="19"/>
        <source>Problem</source>
        <translation>问题</translation>
    </message>
    <message>
        <location filename="../ui/banner.py" line="22"/>
        <source>Choose a model…</source>
        <translation>选择模型…</translation>
    </message>
    <message>
        <location filename="../ui/banner.py" line="23"/>
        <source>Choose a model</source>
        <translation>选择模型</translation>
    </message>
    <message>
        <location filename="../ui/banner.py" line="25"/>
        <source>Dismiss</source>
        <translation>关闭</translation>
    </message>
    <message>
        <location filename="../ui/banner.py" line="26"/>
        <source>Dismiss the message</source>
        <translation>关闭此提示</translation>
    </message>
</context>
<context>
    <name>SettingsDialog</name>
    <message>
        <location filename="../ui/settings_dialog.py" line="79"/>
        <location filename="../ui/settings_dialog.py" line="80"/>
        <source>Settings</source>
        <translation>设置</translation>
    </message>
    <message>
        <location filename="../ui/settings_dialog.py" line="91"/>
        <source>Auto (fastest measured; %1 physical cores)</source>
        <translation>自动（实测最快；%1 个物理核心）</translation>
    </message>
    <message>
        <location filename="../ui/settings_dialog.py" line="93"/>
        <source>Auto (fastest measured)</source>
        <translation>自动（实测最快）</translation>
    </message>
    <message>
        <location filename="../ui/settings_dialog.py" line="97"/>
        <source>Measured speeds</source>
        <translation>测得的速度</translation>
    </message>
    <message>
        <location filename="../ui/settings_dialog.py" line="101"/>
        <source>now %1</source>
        <translation>当前 %1</translation>
    </message>
    <message>
        <location filename="../ui/settings_dialog.py" line="103"/>
        <source>%1 → %2 tokens/s</source>
        <translation>%1 → 每秒 %2 个词元</translation>
    </message>
    <message>
        <location filename="../ui/settings_dialog.py" line="107"/>
        <source>Measured on this computer (threads → speed): %1</source>
        <translation>在这台电脑上测得（线程数 → 速度）：%1</translation>
    </message>
    <message>
        <location filename="../ui/settings_dialog.py" line="111"/>
        <source>Auto measures the speed of each count once, when the app is idle.</source>
        <translation>“自动”会在应用空闲时对每种线程数测一次速度。</translation>
    </message>
    <message>
        <location filename="../ui/settings_dialog.py" line="117"/>
        <source>CPU threads</source>
        <translation>CPU 线程数</translation>
    </message>
    <message>
        <location filename="../ui/settings_dialog.py" line="118"/>
        <source>CPU threads:</source>
        <translation>CPU 线程数：</translation>
    </message>
    <message>
        <location filename="../ui/settings_dialog.py" line="121"/>
        <source>Context limit</source>
        <translation>上下文上限</translation>
    </message>
    <message>
        <location filename="../ui/settings_dialog.py" line="123"/>
        <location filename="../ui/settings_dialog.py" line="126"/>
        <source> tokens</source>
        <translation> 词元</translation>
    </message>
    <message>
        <location filename="../ui/settings_dialog.py" line="124"/>
        <source>Context limit:</source>
        <translation>上下文上限：</translation>
    </message>
    <message>
        <location filename="../ui/settings_dialog.py" line="125"/>
        <source>Maximum reply length</source>
        <translation>最长回答</translation>
    </message>
    <message>
        <location filename="../ui/settings_dialog.py" line="127"/>
        <source>Maximum reply length:</source>
        <translation>最长回答：</translation>
    </message>
    <message>
        <location filename="../ui/settings_dialog.py" line="128"/>
        <source>Temperature</source>
        <translation>温度</translation>
    </message>
    <message>
        <location filename="../ui/settings_dialog.py" line="129"/>
        <source>Temperature:</source>
        <translation>温度：</translation>
    </message>
    <message>
        <location filename="../ui/settings_dialog.py" line="130"/>
        <source>Top-p</source>
        <translation>Top-p</translation>
    </message>
    <message>
        <location filename="../ui/settings_dialog.py" line="131"/>
        <source>Top-p:</source>
        <translation>Top-p：</translation>
    </message>
    <message>
        <location filename="../ui/settings_dialog.py" line="132"/>
        <source>Top-k</source>
        <translation>Top-k</translation>
    </message>
    <message>
        <location filename="../ui/settings_dialog.py" line="133"/>
        <source>off</source>
        <translation>关闭</translation>
    </message>
    <message>
        <location filename="../ui/settings_dialog.py" line="134"/>
        <source>Top-k:</source>
        <translation>Top-k：</translation>
    </message>
    <message>
        <location filename="../ui/settings_dialog.py" line="135"/>
        <source>Repetition penalty</source>
        <translation>重复惩罚</translation>
    </message>
    <message>
        <location filename="../ui/settings_dialog.py" line="136"/>
        <source>Repetition penalty:</source>
        <translation>重复惩罚：</translation>
    </message>
    <message>
        <location filename="../ui/settings_dialog.py" line="137"/>
        <source>Seed</source>
        <translation>随机种子</translation>
    </message>
    <message>
        <location filename="../ui/settings_dialog.py" line="138"/>
        <source>random</source>
        <translation>随机</translation>
    </message>
    <message>
        <location filename="../ui/settings_dialog.py" line="139"/>
        <source>Seed:</source>
        <translation>随机种子：</translation>
    </message>
    <message>
        <location filename="../ui/settings_dialog.py" line="143"/>
        <source>System prompt</source>
        <translation>系统提示</translation>
    </message>
    <message>
        <location filename="../ui/settings_dialog.py" line="145"/>
        <source>System prompt:</source>
        <translation>系统提示：</translation>
    </message>
    <message>
        <location filename="../ui/settings_dialog.py" line="149"/>
        <location filename="../ui/settings_dialog.py" line="160"/>
        <source>Same as the system</source>
        <translation>跟随系统</translation>
    </message>
    <message>
        <location filename="../ui/settings_dialog.py" line="150"/>
        <source>Light</source>
        <translation>浅色</translation>
    </message>
    <message>
        <location filename="../ui/settings_dialog.py" line="151"/>
        <source>Dark</source>
        <translation>深色</translation>
    </message>
    <message>
        <location filename="../ui/settings_dialog.py" line="155"/>
        <source>Theme</source>
        <translation>主题</translation>
    </message>
    <message>
        <location filename="../ui/settings_dialog.py" line="156"/>
        <source>Theme:</source>
        <translation>主题：</translation>
    </message>
    <message>
        <location filename="../ui/settings_dialog.py" line="162"/>
        <source>Language (applies at the next start)</source>
        <translation>语言（下次启动时生效）</translation>
    </message>
    <message>
        <location filename="../ui/settings_dialog.py" line="163"/>
        <source>Language (next start):</source>
        <translation>语言（下次启动）：</translation>
    </message>
    <message>
        <location filename="../ui/settings_dialog.py" line="167"/>
        <source>Model in use</source>
        <translation>使用的模型</translation>
    </message>
    <message>
        <location filename="../ui/settings_dialog.py" line="171"/>
        <source>Import from disk…</source>
        <translation>从磁盘导入…</translation>
    </message>
    <message>
        <location filename="../ui/settings_dialog.py" line="172"/>
        <source>Import a model from disk</source>
        <translation>从磁盘导入模型</translation>
    </message>
    <message>
        <location filename="../ui/settings_dialog.py" line="174"/>
        <source>GGUF file…</source>
        <translation>GGUF 文件…</translation>
    </message>
    <message>
        <location filename="../ui/settings_dialog.py" line="176"/>
        <source>Hugging Face folder or model folder…</source>
        <translation>Hugging Face 文件夹或模型文件夹…</translation>
    </message>
    <message>
        <location filename="../ui/settings_dialog.py" line="181"/>
        <source>Model:</source>
        <translation>模型：</translation>
    </message>
    <message>
        <location filename="../ui/settings_dialog.py" line="182"/>
        <source>To download models, use the Models page.</source>
        <translation>要下载模型，请使用“模型”页面。</translation>
    </message>
    <message>
        <location filename="../ui/settings_dialog.py" line="187"/>
        <source>Serve the model to other apps on this computer</source>
        <translation>向本机上的其他应用提供此模型</translation>
    </message>
    <message>
        <location filename="../ui/settings_dialog.py" line="188"/>
        <source>Local server</source>
        <translation>本地服务器</translation>
    </message>
    <message>
        <location filename="../ui/settings_dialog.py" line="190"/>
        <source>Local server:</source>
        <translation>本地服务器：</translation>
    </message>
    <message>
        <location filename="../ui/settings_dialog.py" line="191"/>
        <source>Local server port</source>
        <translation>本地服务器端口</translation>
    </message>
    <message>
        <location filename="../ui/settings_dialog.py" line="192"/>
        <source>Port:</source>
        <translation>端口：</translation>
    </message>
    <message>
        <location filename="../ui/settings_dialog.py" line="194"/>
        <source>none (any app on this computer may use it)</source>
        <translation>无（本机上的任何应用都可使用）</translation>
    </message>
    <message>
        <location filename="../ui/settings_dialog.py" line="195"/>
        <source>Local server API key</source>
        <translation>本地服务器 API 密钥</translation>
    </message>
    <message>
        <location filename="../ui/settings_dialog.py" line="196"/>
        <source>API key:</source>
        <translation>API 密钥：</translation>
    </message>
    <message>
        <location filename="../ui/settings_dialog.py" line="199"/>
        <source>Local server address</source>
        <translation>本地服务器地址</translation>
    </message>
    <message>
        <location filename="../ui/settings_dialog.py" line="208"/>
        <source>Apply settings</source>
        <translation>应用设置</translation>
    </message>
    <message>
        <location filename="../ui/settings_dialog.py" line="209"/>
        <source>Cancel</source>
        <translation>取消</translation>
    </message>
    <message>
        <location filename="../ui/settings_dialog.py" line="220"/>
        <source>OpenAI base URL %1/v1, chat page %1/</source>
        <translation>OpenAI 基础 URL %1/v1，聊天页面 %1/</translation>
    </message>
    <message>
        <location filename="../ui/settings_dialog.py" line="222"/>
        <source>Off: nothing listens on the network.</source>
        <translation>关闭：不在网络上监听任何端口。</translation>
    </message>
</context>
<context>
    <name>Sidebar</name>
    <message>
        <location filename="../ui/sidebar.py" line="112"/>
        <source>Pinned</source>
        <translation>已置顶</translation>
    </message>
    <message>
        <location filename="../ui/sidebar.py" line="113"/>
        <source>Today</source>
        <translation>今天</translation>
    </message>
    <message>
        <location filename="../ui/sidebar.py" line="114"/>
        <source>Yesterday</source>
        <translation>昨天</translation>
    </message>
    <message>
        <location filename="../ui/sidebar.py" line="115"/>
        <source>Previous 7 days</source>
        <translation>过去 7 天</translation>
    </message>
    <message>
        <location filename="../ui/sidebar.py" line="116"/>
        <source>Older</source>
        <translation>更早</translation>
    </message>
    <message>
        <location filename="../ui/sidebar.py" line="539"/>
        <location filename="../ui/sidebar.py" line="541"/>
        <source>New chat</source>
        <translation>新对话</translation>
    </message>
    <message>
        <location filename="../ui/sidebar.py" line="542"/>
        <source>Start a new chat (Ctrl+N)</source>
        <translation>开始新对话 (Ctrl+N)</translation>
    </message>
    <message>
        <location filename="../ui/sidebar.py" line="548"/>
        <location filename="../ui/sidebar.py" line="555"/>
        <location filename="../ui/sidebar.py" line="622"/>
        <source>Search chats</source>
        <translation>搜索对话</translation>
    </message>
    <message>
        <location filename="../ui/sidebar.py" line="549"/>
        <location filename="../ui/sidebar.py" line="552"/>
        <source>Search chats (Ctrl+K)</source>
        <translation>搜索对话 (Ctrl+K)</translation>
    </message>
    <message>
        <location filename="../ui/sidebar.py" line="557"/>
        <source>Clear the search</source>
        <translation>清除搜索</translation>
    </message>
    <message>
        <location filename="../ui/sidebar.py" line="569"/>
        <location filename="../ui/sidebar.py" line="588"/>
        <source>Chats</source>
        <translation>对话</translation>
    </message>
    <message>
        <location filename="../ui/sidebar.py" line="571"/>
        <source>Search results</source>
        <translation>搜索结果</translation>
    </message>
    <message>
        <location filename="../ui/sidebar.py" line="581"/>
        <source>Search result</source>
        <translation>搜索结果</translation>
    </message>
    <message>
        <location filename="../ui/sidebar.py" line="587"/>
        <source>No chats yet. What you ask starts one, and it shows here.</source>
        <translation>还没有对话。你的第一个问题会开始一个对话，并显示在这里。</translation>
    </message>
    <message>
        <location filename="../ui/sidebar.py" line="600"/>
        <source>Models</source>
        <translation>模型</translation>
    </message>
    <message>
        <location filename="../ui/sidebar.py" line="600"/>
        <source>Models: download, import, choose</source>
        <translation>模型：下载、导入、选择</translation>
    </message>
    <message>
        <location filename="../ui/sidebar.py" line="602"/>
        <source>Settings</source>
        <translation>设置</translation>
    </message>
    <message>
        <location filename="../ui/sidebar.py" line="602"/>
        <source>Settings (Ctrl+,)</source>
        <translation>设置 (Ctrl+,)</translation>
    </message>
    <message>
        <location filename="../ui/sidebar.py" line="605"/>
        <location filename="../ui/sidebar.py" line="608"/>
        <source>Import and export chats</source>
        <translation>导入和导出对话</translation>
    </message>
    <message>
        <location filename="../ui/sidebar.py" line="609"/>
        <source>Export all chats…</source>
        <translation>导出全部对话…</translation>
    </message>
    <message>
        <location filename="../ui/sidebar.py" line="611"/>
        <source>Import chats…</source>
        <translation>导入对话…</translation>
    </message>
    <message>
        <location filename="../ui/sidebar.py" line="790"/>
        <source>The chats cannot be searched: %1</source>
        <translation>无法搜索对话：%1</translation>
    </message>
    <message>
        <location filename="../ui/sidebar.py" line="813"/>
        <source>The title matches</source>
        <translation>标题匹配</translation>
    </message>
    <message>
        <location filename="../ui/sidebar.py" line="836"/>
        <source>No chat contains “%1”.</source>
        <translation>没有对话包含“%1”。</translation>
    </message>
    <message>
        <location filename="../ui/sidebar.py" line="875"/>
        <source>Chat actions</source>
        <translation>对话操作</translation>
    </message>
    <message>
        <location filename="../ui/sidebar.py" line="876"/>
        <source>Rename</source>
        <translation>重命名</translation>
    </message>
    <message>
        <location filename="../ui/sidebar.py" line="877"/>
        <source>Unpin</source>
        <translation>取消置顶</translation>
    </message>
    <message>
        <location filename="../ui/sidebar.py" line="877"/>
        <source>Pin</source>
        <translation>置顶</translation>
    </message>
    <message>
        <location filename="../ui/sidebar.py" line="878"/>
        <source>Export…</source>
        <translation>导出…</translation>
    </message>
    <message>
        <location filename="../ui/sidebar.py" line="880"/>
        <source>Delete…</source>
        <translation>删除…</translation>
    </message>
    <message>
        <location filename="../ui/sidebar.py" line="927"/>
        <source>The chat could not be changed</source>
        <translation>无法修改对话</translation>
    </message>
    <message>
        <location filename="../ui/sidebar.py" line="943"/>
        <source>Delete conversation</source>
        <translation>删除对话</translation>
    </message>
    <message>
        <location filename="../ui/sidebar.py" line="944"/>
        <source>Delete “%1” and all its messages? This cannot be undone.</source>
        <translation>删除“%1”及其全部消息？此操作无法撤销。</translation>
    </message>
    <message>
        <location filename="../ui/sidebar.py" line="951"/>
        <source>Delete</source>
        <translation>删除</translation>
    </message>
    <message>
        <location filename="../ui/sidebar.py" line="952"/>
        <source>Delete the conversation</source>
        <translation>删除该对话</translation>
    </message>
    <message>
        <location filename="../ui/sidebar.py" line="962"/>
        <source>The chat could not be deleted</source>
        <translation>无法删除对话</translation>
    </message>
    <message>
        <location filename="../ui/sidebar.py" line="981"/>
        <source>Markdown (*.md)</source>
        <translation>Markdown (*.md)</translation>
    </message>
    <message>
        <location filename="../ui/sidebar.py" line="982"/>
        <source>JSON, every version (*.json)</source>
        <translation>JSON，包含所有版本 (*.json)</translation>
    </message>
    <message>
        <location filename="../ui/sidebar.py" line="985"/>
        <source>Export chat</source>
        <translation>导出对话</translation>
    </message>
    <message>
        <location filename="../ui/sidebar.py" line="1001"/>
        <source>The chat was not exported</source>
        <translation>对话未导出</translation>
    </message>
    <message>
        <location filename="../ui/sidebar.py" line="1006"/>
        <source>Exported “%1” to %2</source>
        <translation>已将“%1”导出到 %2</translation>
    </message>
    <message>
        <location filename="../ui/sidebar.py" line="1015"/>
        <source>Export all chats</source>
        <translation>导出全部对话</translation>
    </message>
    <message>
        <location filename="../ui/sidebar.py" line="1015"/>
        <source>Chat export (*.json)</source>
        <translation>对话导出文件 (*.json)</translation>
    </message>
    <message>
        <location filename="../ui/sidebar.py" line="1025"/>
        <source>The chats were not exported</source>
        <translation>对话未导出</translation>
    </message>
    <message>
        <location filename="../ui/sidebar.py" line="1031"/>
        <source>Exported %1 chats to %2</source>
        <translation>已将 %1 个对话导出到 %2</translation>
    </message>
    <message>
        <location filename="../ui/sidebar.py" line="1031"/>
        <source>Exported 1 chat to %2</source>
        <translation>已将 1 个对话导出到 %2</translation>
    </message>
    <message>
        <location filename="../ui/sidebar.py" line="1037"/>
        <source>Some chats were left out</source>
        <translation>部分对话未导出</translation>
    </message>
    <message>
        <location filename="../ui/sidebar.py" line="1038"/>
        <source>These chats are damaged and were not exported: %1</source>
        <translation>以下对话已损坏，未导出：%1</translation>
    </message>
    <message>
        <location filename="../ui/sidebar.py" line="1049"/>
        <source>Import chats</source>
        <translation>导入对话</translation>
    </message>
    <message>
        <location filename="../ui/sidebar.py" line="1051"/>
        <source>Chat export (*.json);;All files (*)</source>
        <translation>对话导出文件 (*.json);;所有文件 (*)</translation>
    </message>
    <message>
        <location filename="../ui/sidebar.py" line="1059"/>
        <source>Nothing was imported</source>
        <translation>未导入任何内容</translation>
    </message>
    <message>
        <location filename="../ui/sidebar.py" line="1064"/>
        <source>Imported 1 chat</source>
        <translation>已导入 1 个对话</translation>
    </message>
    <message>
        <location filename="../ui/sidebar.py" line="1066"/>
        <source>Imported %1 chats</source>
        <translation>已导入 %1 个对话</translation>
    </message>
    <message>
        <location filename="../ui/sidebar.py" line="1069"/>
        <source> (%1 were here already)</source>
        <translation>（%1 个已存在）</translation>
    </message>
    <message>
        <location filename="../ui/sidebar.py" line="1069"/>
        <source> (1 was here already)</source>
        <translation>（1 个已存在）</translation>
    </message>
</context>
<context>
    <name>WindowStatusBar</name>
    <message>
        <location filename="../ui/status_bar.py" line="24"/>
        <source>Starting…</source>
        <translation>正在启动…</translation>
    </message>
    <message>
        <location filename="../ui/status_bar.py" line="25"/>
        <source>Status</source>
        <translation>状态</translation>
    </message>
    <message>
        <location filename="../ui/status_bar.py" line="31"/>
        <source>Answer speed</source>
        <translation>回答速度</translation>
    </message>
    <message>
        <location filename="../ui/status_bar.py" line="34"/>
        <source>Local server</source>
        <translation>本地服务器</translation>
    </message>
    <message>
        <location filename="../ui/status_bar.py" line="43"/>
        <source>Ready · %1 · %2</source>
        <translation>就绪 · %1 · %2</translation>
    </message>
    <message>
        <location filename="../ui/status_bar.py" line="48"/>
        <source>%1
Loaded in %2 s, warmed up in %3 s</source>
        <translation>%1
加载用时 %2 秒，预热用时 %3 秒</translation>
    </message>
    <message>
        <location filename="../ui/status_bar.py" line="57"/>
        <source>1 thread</source>
        <translation>1 个线程</translation>
    </message>
    <message>
        <location filename="../ui/status_bar.py" line="57"/>
        <source>%1 threads</source>
        <translation>%1 个线程</translation>
    </message>
    <message>
        <location filename="../ui/status_bar.py" line="61"/>
        <source>waiting for the first token…</source>
        <translation>等待第一个词元…</translation>
    </message>
    <message>
        <location filename="../ui/status_bar.py" line="62"/>
        <source>Writing…</source>
        <translation>正在撰写…</translation>
    </message>
    <message>
        <location filename="../ui/status_bar.py" line="66"/>
        <source>first token %1 s</source>
        <translation>首个词元 %1 秒</translation>
    </message>
    <message>
        <location filename="../ui/status_bar.py" line="70"/>
        <source>Writing… %1 tokens/s</source>
        <translation>正在撰写… 每秒 %1 个词元</translation>
    </message>
    <message>
        <location filename="../ui/status_bar.py" line="75"/>
        <source>first token %1 s · %2 tokens/s · %3 tokens</source>
        <translation>首个词元 %1 秒 · %2 词元/秒 · %3 个词元</translation>
    </message>
    <message>
        <location filename="../ui/status_bar.py" line="86"/>
        <source>API %1</source>
        <translation>API %1</translation>
    </message>
    <message>
        <location filename="../ui/status_bar.py" line="88"/>
        <source>API request running… (%1)</source>
        <translation>API 请求进行中…（%1）</translation>
    </message>
    <message>
        <location filename="../ui/status_bar.py" line="91"/>
        <source>Apps on this computer can use the model at %1/v1 (OpenAI-compatible).</source>
        <translation>本机上的应用可以通过 %1/v1 使用此模型（兼容 OpenAI）。</translation>
    </message>
</context>
<context>
    <name>catalog</name>
    <message>
        <location filename="../ui/catalog_texts.py" line="18"/>
        <source>The default: small and fast on any laptop CPU; good for everyday questions and short texts.</source>
        <translation>默认模型：小巧，在任何笔记本电脑的 CPU 上都很快；适合日常问答和短文本。</translation>
    </message>
    <message>
        <location filename="../ui/catalog_texts.py" line="22"/>
        <source>Noticeably better answers, about three times slower; wants 4 GB of free memory.</source>
        <translation>回答明显更好，速度约慢三倍；需要 4 GB 空闲内存。</translation>
    </message>
    <message>
        <location filename="../ui/catalog_texts.py" line="25"/>
        <source>Tuned for code: explaining, writing and fixing small pieces of code.</source>
        <translation>专为代码调优：解释、编写和修复小段代码。</translation>
    </message>
    <message>
        <location filename="../ui/catalog_texts.py" line="26"/>
        <source>The better code model of the two; wants 4 GB of free memory.</source>
        <translation>两个代码模型中更强的一个；需要 4 GB 空闲内存。</translation>
    </message>
    <message>
        <location filename="../ui/catalog_texts.py" line="27"/>
        <source>The ONNX export published by onnx-community (4-bit weights), used as it is: nothing is built on this machine.</source>
        <translation>onnx-community 发布的 ONNX 导出版本（4 位权重），直接使用：不在这台电脑上构建。</translation>
    </message>
</context>
<context>
    <name>parent</name>
    <message>
        <location filename="../ui/chat_view.py" line="66"/>
        <source>Open link</source>
        <translation>打开链接</translation>
    </message>
    <message>
        <location filename="../ui/chat_view.py" line="67"/>
        <source>Open this address outside the app?</source>
        <translation>在应用之外打开此地址？</translation>
    </message>
</context>
<context>
    <name>presets</name>
    <message>
        <location filename="../ui/presets.py" line="58"/>
        <source>Assistant</source>
        <translation>助手</translation>
    </message>
    <message>
        <location filename="../ui/presets.py" line="61"/>
        <source>Coder</source>
        <translation>程序员</translation>
    </message>
    <message>
        <location filename="../ui/presets.py" line="73"/>
        <source>Translator (Chinese ↔ English)</source>
        <translation>翻译（中文 ↔ 英文）</translation>
    </message>
    <message>
        <location filename="../ui/presets.py" line="86"/>
        <source>Concise</source>
        <translation>简洁</translation>
    </message>
</context>
<context>
    <name>prompts</name>
    <message>
        <location filename="../ui/presets.py" line="63"/>
        <source>You are an expert programmer. Answer with correct, idiomatic, complete code in fenced code blocks that name their language, then explain it briefly. Point out bugs, edge cases and simpler ways when you see them. If the request is ambiguous, say what you assumed.</source>
        <translation>你是一名资深程序员。请给出正确、地道、完整的代码，放在标明语言的代码块中，然后简要解释。发现错误、边界情况或更简单的写法时请指出。如果请求有歧义，请说明你做了哪些假设。</translation>
    </message>
    <message>
        <location filename="../ui/presets.py" line="75"/>
        <source>You are a translator between Chinese and English. If the user&apos;s text is Chinese, translate it into natural, fluent English; otherwise translate it into natural, fluent Simplified Chinese. Keep the meaning, tone and formatting (lists, code, line breaks). Reply with the translation only: do not answer questions in the text, explain it or add notes.</source>
        <translation>你是一名中英互译的译者。如果用户的文字是中文，就译成自然、流畅的英文；否则译成自然、流畅的简体中文。保留原文的意思、语气和格式（列表、代码、换行）。只回复译文：不要回答文中的问题，不要解释，也不要加注释。</translation>
    </message>
    <message>
        <location filename="../ui/presets.py" line="88"/>
        <source>You are a helpful assistant. Answer as briefly as the question allows: a sentence or two, or a short list. No introduction, no summary, no repeating the question.</source>
        <translation>你是一个乐于助人的助手。在问题允许的范围内尽量简短地回答：一两句话，或一个简短的列表。不要开场白，不要总结，也不要复述问题。</translation>
    </message>
    <message>
        <location filename="../ui/presets.py" line="98"/>
        <source>You are a helpful assistant.</source>
        <translation>你是一个乐于助人的助手。</translation>
    </message>
</context>
</TS>
